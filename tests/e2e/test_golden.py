"""Golden verdicts and exports: what `check --json` and `export` say of every sample log, fixture and
simulated scenario (every setup, K = 1/2/4), recorded once and compared on every run.

Why: the code is being reshaped (issue #39: one implementation of each thing); the answers must
not move with it.  A digest per case (tests/golden/verdicts.json) keeps what a reader of a diff
needs (status, state, each alert's rule, signal, severity, rollouts, count and message, each
signal's status) plus a hash of the whole `check --json` text and of the exports (CSV on the
rollout axis, JSON on the step axis), so any other change shows too.

The clock is fixed: each log's mtime is set to 3 days before NOW (a finished run opened later,
the common case) and the report is made at NOW.  Where a change of an answer is meant, write the
file again and say which answers changed and why in the commit:

    GRPO_TUI_WRITE_GOLDEN=1 python -m pytest tests/e2e/test_golden.py -p no:xdist
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grpo_tui.export import render
from grpo_tui.pipeline import judge_path
from grpo_tui.simulate import SCENARIOS, SETUPS, generate

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "verdicts.json"
NOW = 1.9e9
MTIME = NOW - 3 * 86400
START = datetime(2026, 3, 1, tzinfo=UTC)
WRITE = os.environ.get("GRPO_TUI_WRITE_GOLDEN", "") not in ("", "0")

LOGS = sorted((ROOT / "sample_logs").glob("*.log")) + sorted((ROOT / "tests" / "fixtures").glob("*.log"))
SCEN = list(SCENARIOS)
SIMULATED = [(scen, setup, 101 + i * 7 + j, 1) for i, scen in enumerate(SCEN) for j, setup in enumerate(SETUPS)]
SIMULATED += [(scen, "manual", 61 + i, (2, 4)[i % 2]) for i, scen in enumerate(SCEN)]
CASES = [f"log:{p.relative_to(ROOT)}" for p in LOGS] + [f"sim:{s}:{u}:{seed}:K{k}" for s, u, seed, k in SIMULATED]


def _write_case(case: str, tmp: Path) -> Path:
    if case.startswith("log:"):
        path = tmp / Path(case[4:]).name
        path.write_bytes((ROOT / case[4:]).read_bytes())
    else:
        _, scen, setup, seed, k = case.split(":")
        path = tmp / "sim.log"
        lines = generate(scen, 48, int(seed), steps_per_rollout=int(k[1:]), setup=setup, start=START)
        path.write_text("".join(line + "\n" for _, line in lines))
    os.utime(path, (MTIME, MTIME))
    return path


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def digest(path: Path, label: str) -> dict:
    """What the golden file keeps of one case (see the module's doc)."""
    pipe = judge_path(str(path), now=NOW)
    full = pipe.report(NOW).to_json(label, True)
    text = json.dumps(full, sort_keys=True, allow_nan=False, default=str)
    rows = judge_path(str(path), judging=False, rows_only=True)  # (as export reads it)
    exports = {}
    for fmt, axis in (("csv", "rollout"), ("json", "step")):
        try:
            exports[f"{fmt}_{axis}"] = _sha(render(rows.store, fmt, axis))
        except Exception as exc:  # (a log without metric lines: export says why; keep that it failed)
            exports[f"{fmt}_{axis}"] = f"error: {type(exc).__name__}"
    return {
        "status": full["status"],
        "state": full["state"],
        "rollouts": full["rollouts"],
        "alerts": [
            "|".join(
                str(a.get(k))
                for k in ("rule", "signal", "severity", "rollout", "raised_at", "cleared_at", "count", "message")
            )
            for a in full["alerts"]
        ],
        "signals": {sig: s.get("status") for sig, s in sorted(full["signals"].items())},
        "check_sha": _sha(text),
        "export_sha": exports,
    }


def _golden() -> dict:
    if not GOLDEN.exists():
        return {}
    return json.loads(GOLDEN.read_text())


@pytest.mark.skipif(WRITE, reason="writing the golden file (test_write_golden)")
@pytest.mark.parametrize("case", CASES)
def test_answers_are_the_golden_ones(case, tmp_path):
    want = _golden().get(case)
    assert want is not None, f"{case}: not in {GOLDEN.name} (write it: see this module's doc)"
    got = digest(_write_case(case, tmp_path), case)
    assert got == want


@pytest.mark.skipif(not WRITE, reason="GRPO_TUI_WRITE_GOLDEN=1 writes the golden file")
def test_write_golden(tmp_path):
    out = {}
    for i, case in enumerate(CASES):
        d = tmp_path / str(i)
        d.mkdir()
        out[case] = digest(_write_case(case, d), case)
    GOLDEN.parent.mkdir(exist_ok=True)
    buf = io.StringIO()
    json.dump(out, buf, indent=1, sort_keys=True)
    GOLDEN.write_text(buf.getvalue() + "\n")


def test_every_case_is_in_the_golden_file():
    """No case without its golden answer, and no stale entry for a case that is gone."""
    if WRITE:
        pytest.skip("writing")
    assert sorted(_golden()) == sorted(CASES)
