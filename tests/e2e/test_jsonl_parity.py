"""Miles' dashboard/metrics.jsonl judged like the console log it mirrors (issue #41).

Each sample log with metric lines is written as Miles' writer would write its metrics.jsonl
(scripts/make_jsonl_fixtures.py) and both are judged: the same alerts (rule, severity,
rollout) and status, the console-only rules aside - crashed (a traceback), engine-down
(SGLang's health lines), stalled (line times against the file's age) and no-steps (no
metric line at all): the jsonl holds none of what they read.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from grpo_tui import cli
from grpo_tui.pipeline import judge_path

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"
CONSOLE_ONLY = {"crashed", "engine-down", "stalled", "no-steps"}
# the sample logs whose verdict rests on a console-only rule
DIFFERS = {"crashed": {"crashed"}, "engine-down": {"engine-down", "stalled"}, "stalled": {"stalled"}}


def _maker():
    spec = importlib.util.spec_from_file_location("make_jsonl_fixtures", ROOT / "scripts" / "make_jsonl_fixtures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKER = _maker()


def _verdict(path: Path) -> tuple[str, list[tuple]]:
    rep = judge_path(str(path)).report()
    return rep.status, sorted((a.rule, a.severity, a.rollout) for a in rep.alerts)


@pytest.mark.parametrize("log", sorted(LOGS.glob("*.log")), ids=lambda p: p.stem)
def test_metrics_jsonl_judged_as_its_console_log(log: Path, tmp_path: Path):
    lines = MAKER.jsonl_lines(log.read_text(encoding="utf-8").split("\n"))
    if not lines:
        assert log.stem == "no-steps"  # nothing for Miles' writer to write
        return
    jsonl = tmp_path / "metrics.jsonl"
    jsonl.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    status, alerts = _verdict(log)
    j_status, j_alerts = _verdict(jsonl)
    assert [a for a in alerts if a[0] not in CONSOLE_ONLY] == j_alerts
    assert not [a for a in j_alerts if a[0] in CONSOLE_ONLY]
    only = {a[0] for a in alerts if a[0] in CONSOLE_ONLY}
    # (engine-down's log is also `stalled` once its file is old enough: the sample's mtime decides)
    assert only - {"stalled"} == DIFFERS.get(log.stem, set()) - {"stalled"} and only <= DIFFERS.get(log.stem, set())
    if not only:
        assert status == j_status
    pipe = judge_path(str(jsonl))
    assert pipe.store.segments[-1].framework == "miles"
    assert pipe.parser.counts.unreadable == 0 and pipe.parser.counts.noise == 0


def test_committed_example_reads_as_miles_records(capsys):
    """tests/fixtures/metrics.jsonl: the first rollouts of healthy-seed1 as Miles writes them."""
    path = ROOT / "tests" / "fixtures" / "metrics.jsonl"
    first = json.loads(path.read_text(encoding="utf-8").split("\n")[0])
    assert set(first) == {"ts", "step_key", "step", "metrics"}
    pipe = judge_path(str(path), judging=False)
    seg = pipe.store.segments[-1]
    assert len(seg.ids) >= 3 and "rollout/raw_reward" in seg.columns and "perf/rollout_time" in seg.columns
    assert "rollout/step" not in seg.columns  # the console's rollout lines don't show it
    assert cli.main(["check", "--json", str(path)]) in (0, 1, 2)
    assert json.loads(capsys.readouterr().out)
