"""Write a console log's metrics as Miles' `dashboard/metrics.jsonl` would hold them.

Miles (`--use-miles-dashboard --dump-details DIR`) writes one line per `tracking.log` call:
`{"ts": <epoch s>, "step_key": ..., "step": N, "metrics": {...}}`, compact JSON with NaN and
Infinity as Python's json writes them (radixark/miles: miles/dashboard/backend.py
`dashboard_log`, store.py `MetricsRecord` and `flush`).  The dict is the one the console
prints, plus the step key's own entry (tracking.log passes it whole; only `step N:` shows it).
The step keys: `train/step` for `step N:`, `eval/step` for `eval N:`, `rollout/step` for the
rest (rollout, perf, multi_turn, passrate).  Records come from the project's own parser
(`LineParser().feed_lines` + `.flush()`); the doubled `step N:` line Miles prints from two
files is one tracking.log call, so it is written once.

    .venv/bin/python scripts/make_jsonl_fixtures.py sample_logs/healthy-seed1.log out.jsonl
    .venv/bin/python scripts/make_jsonl_fixtures.py --head 12 LOG OUT   # the first 12 lines only

Needs only the project (no Miles, no scratch venv): the writer is three lines of stdlib json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grpo_tui.lines.parse import LineParser  # noqa: E402
from grpo_tui.lines.records import MetricRecord  # noqa: E402

STEP_KEYS = {"step": "train/step", "eval": "eval/step"}


def jsonl_lines(console: list[str]) -> list[str]:
    """The metrics.jsonl lines Miles would have written for this console log."""
    p = LineParser()
    items = p.feed_lines(console)
    items.extend(p.flush())
    out: list[str] = []
    last_step: tuple | None = None
    ts = 0.0
    for rec in items:
        if not isinstance(rec, MetricRecord):
            continue
        metrics = dict(rec.metrics)
        if rec.kind == "step":
            same = (rec.n, metrics)
            if same == last_step:
                continue  # log_utils.py and model.py print the one call's dict twice
            last_step = same
        key = STEP_KEYS.get(rec.kind, "rollout/step")
        metrics.setdefault(key, rec.n)
        if rec.ts is not None:
            ts = rec.ts
        line = {"ts": ts, "step_key": key, "step": rec.n, "metrics": metrics}
        out.append(json.dumps(line, separators=(",", ":")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("out")
    ap.add_argument("--head", type=int, default=0, help="write only the first N jsonl lines")
    a = ap.parse_args(argv)
    got = jsonl_lines(Path(a.log).read_text(encoding="utf-8", errors="replace").split("\n"))
    if a.head:
        got = got[: a.head]
    Path(a.out).write_text("".join(line + "\n" for line in got), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
