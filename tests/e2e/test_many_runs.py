"""Many runs (issue #13): `check` over several logs and folders, the baseline from seeds, and
the RunSet that follows many runs for the overview."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from grpo_tui.cli import main
from grpo_tui.judge.ranges import load_ranges
from grpo_tui.judge.signals import SIGNALS
from grpo_tui.pipeline import judge_path
from grpo_tui.runs import RunSet, discover, display_names, judge_many, load_baseline, worst

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
SEEDS = [str(LOGS / f"healthy-seed{i}.log") for i in (1, 2, 3)]
GAP = str(LOGS / "gap-jump.log")
STALLED = str(LOGS / "stalled.log")
OLD = 1_700_000_000  # a fixed, old mtime: every run reads as finished/quiet, never live


def _folder(tmp_path: Path, names: list[str], sub: str = "runs") -> Path:
    d = tmp_path / sub
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(LOGS / n, d / n)
        os.utime(d / n, (OLD, OLD))
    return d


def _check(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    return code, capsys.readouterr().out


def test_check_four_logs_one_verdict_each_exit_worst(capsys):
    code, out = _check(capsys, SEEDS[0], SEEDS[1], GAP, STALLED, "--json")
    assert code == 2
    runs = json.loads(out)["runs"]
    assert [r["path"] for r in runs] == [SEEDS[0], SEEDS[1], GAP, STALLED]
    assert [r["status"] for r in runs] == ["ok", "ok", "critical", "critical"]
    assert {"path", "status", "state", "rollouts", "alerts", "signals", "ranges"} <= set(runs[0])
    assert "gap-jump" in [a["rule"] for a in runs[2]["alerts"]]
    assert "stalled" in [a["rule"] for a in runs[3]["alerts"]]
    # each run's object is exactly what `check RUN --json` prints for it
    for r in runs:
        code1, out1 = _check(capsys, r["path"], "--json")
        one = json.loads(out1)
        assert code1 == {"ok": 0, "critical": 2}[r["status"]]
        # (state is left out: a checkout's mtime can cross the 2-minute `live` edge between the calls)
        same = ("path", "status", "ranges", "rollouts", "last_rollout", "signals")
        assert one["state"] in ("live", "quiet", "finished") and r["state"] in ("live", "quiet", "finished")
        assert {k: one[k] for k in same} == {k: r[k] for k in same}
        # (a stalled alert's words carry the age at the moment it was judged)
        assert [(a["rule"], a["severity"], a["rollout"]) for a in one["alerts"]] == [
            (a["rule"], a["severity"], a["rollout"]) for a in r["alerts"]
        ]


def test_check_human_table_one_line_per_run_with_top_alert(capsys):
    code, out = _check(capsys, SEEDS[0], SEEDS[1], GAP, STALLED)
    assert code == 2
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["status", "run", "state"]
    body = lines[1:5]
    assert [ln.split()[0] for ln in body] == ["✓", "✓", "✗", "✗"]
    assert "gap-jump@16" in body[2] and "stalled@15" in body[3]
    assert body[0].rstrip().endswith("-")  # a healthy run has no alert
    assert lines[-1].startswith("4 runs: 2 critical, 2 ok; worst CRITICAL (exit 2)")


def test_single_file_output_unchanged(capsys):
    code, out = _check(capsys, GAP, "--json")
    obj = json.loads(out)
    assert code == 2 and "runs" not in obj and obj["path"] == GAP
    code, out = _check(capsys, GAP)
    assert out.startswith(f"{GAP}: CRITICAL")


def test_check_folder_and_recursive(tmp_path, capsys):
    d = _folder(tmp_path, ["healthy-seed1.log", "gap-jump.log"])
    _folder(tmp_path, ["stalled.log"], sub="runs/sub")
    (d / "notes.txt").write_text("not a log\n")
    code, out = _check(capsys, str(d), "--json")
    assert code == 2
    assert [Path(r["path"]).name for r in json.loads(out)["runs"]] == ["gap-jump.log", "healthy-seed1.log"]
    code, out = _check(capsys, str(d), "-r", "--json")
    assert [Path(r["path"]).name for r in json.loads(out)["runs"]] == [
        "gap-jump.log",
        "healthy-seed1.log",
        "stalled.log",
    ]
    # a folder with one log is still the many-runs form (the form follows the arguments)
    one = _folder(tmp_path, ["healthy-seed1.log"], sub="one")
    code, out = _check(capsys, str(one), "--json")
    assert code == 0 and len(json.loads(out)["runs"]) == 1


def test_check_empty_folder_and_missing_files_are_unknown(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = _check(capsys, str(empty), "--json")
    assert code == 3 and json.loads(out) == {"runs": []}
    code, out = _check(capsys, SEEDS[0], str(tmp_path / "nope.log"), "--json")
    runs = json.loads(out)["runs"]
    assert code == 3 and runs[1]["status"] == "unknown" and "no such file" in runs[1]["error"]
    code, out = _check(capsys, GAP, str(tmp_path / "nope.log"))
    assert code == 2 and "no such file" in out


def test_worst_order():
    assert worst(["ok", "unknown"]) == "unknown"
    assert worst(["unknown", "warning"]) == "warning"
    assert worst(["warning", "critical", "unknown"]) == "critical"
    assert worst([]) == "unknown"


def test_discover_dedups_and_names(tmp_path):
    d = _folder(tmp_path, ["healthy-seed1.log", "gap-jump.log"])
    got = discover([str(d), str(d / "gap-jump.log")])
    assert [Path(p).name for p in got] == ["gap-jump.log", "healthy-seed1.log"]
    names = display_names([str(d / "a.log"), str(tmp_path / "x" / "a.log")], [str(d)])
    assert names[str(d / "a.log")] != names[str(tmp_path / "x" / "a.log")]


# ---------------------------------------------------------------------- baseline
def test_baseline_is_the_envelope_calibrate_writes(tmp_path, capsys):
    out = tmp_path / "ranges.toml"
    assert main(["calibrate", *SEEDS, "-o", str(out)]) == 0
    written = load_ranges(str(out))
    base = load_baseline(SEEDS)
    assert set(base.ranges.envelopes) == set(written.envelopes)
    for sig_id, env in written.envelopes.items():
        got = base.ranges.envelopes[sig_id]
        np.testing.assert_allclose(got.steps, env.steps)
        np.testing.assert_allclose(got.lo, env.lo, rtol=1e-12)
        np.testing.assert_allclose(got.hi, env.hi, rtol=1e-12)
        for r in (0, 5, 30, 80):
            assert base.ranges.bounds(sig_id, r) == pytest.approx(written.bounds(sig_id, r), rel=1e-9)
    assert load_baseline(SEEDS) is base  # cached while the files do not change
    assert {name for name, _, _ in base.series["reward"]} == {Path(s).name for s in SEEDS}


def test_check_with_baseline(capsys):
    code, out = _check(capsys, GAP, SEEDS[2], "--baseline", SEEDS[0], SEEDS[1], "--json")
    runs = json.loads(out)["runs"]
    assert code == 2
    assert [r["ranges"] for r in runs] == ["baseline", "baseline"]
    assert [r["status"] for r in runs] == ["critical", "ok"]
    # the range shown is the seeds' envelope, not the manual's default
    gap_hi = runs[1]["signals"]["gap"]["range"][1]
    assert gap_hi != pytest.approx(0.0164)
    code, _ = _check(capsys, GAP, "--baseline", SEEDS[0])
    assert code == 3  # one seed is not a baseline


# ---------------------------------------------------------------------- RunSet
def test_runset_rows_agree_with_check_and_sort_by_severity(tmp_path):
    d = _folder(tmp_path, ["healthy-seed1.log", "healthy-seed2.log", "gap-jump.log", "stalled.log"])
    rs = RunSet([str(d)])
    rows = rs.load_all()
    by_name = {r.name: r for r in rows}
    verdicts = {Path(r.path).name: r.status for r in judge_many(sorted(map(str, d.iterdir())))}
    assert {n: r.status for n, r in by_name.items()} == verdicts
    assert [r.status for r in rows][:2] == ["critical", "critical"]
    assert by_name["gap-jump.log"].top.startswith("gap-jump@16")
    # (an mtime years old: past the horizon, the stalled log counts as ended; its own lines show the hang)
    assert by_name["stalled.log"].state == "ended" and by_name["gap-jump.log"].state == "finished"
    assert by_name["stalled.log"].top.startswith("stalled@15")
    assert len(by_name["healthy-seed1.log"].reward) == 48
    assert rs.pass_once() == []  # nothing changed: no row is re-sent
    rs.close()


def test_runset_follows_growth_and_new_files(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    src = (LOGS / "healthy-seed1.log").read_bytes()
    half = src[: src.index(b"rollout 20:")]
    half = half[: half.rindex(b"\n") + 1]
    (d / "a.log").write_bytes(half)
    rs = RunSet([str(d)])
    rs.load_all()
    first = rs.rows()[0]
    assert first.state == "live" and 15 <= first.rollouts <= 21
    with open(d / "a.log", "ab") as fh:
        fh.write(src[len(half) :])
    changed = rs.pass_once()
    assert changed and changed[0].rollouts == 48
    (d / "b.log").write_bytes(src)
    rs._last_scan = -1e9  # don't wait RESCAN_S for the listing
    rs.pass_once()
    assert sorted(r.name for r in rs.rows()) == ["a.log", "b.log"]
    ids, vals = rs.series(str(d / "a.log"), "reward")
    assert len(ids) == 48 and np.isfinite(vals).all()
    rs.close()


def test_runset_baseline_rejudges(tmp_path):
    d = _folder(tmp_path, ["healthy-seed1.log", "healthy-seed2.log", "gap-jump.log"])
    rs = RunSet([str(d)])
    rs.load_all()
    base = load_baseline([str(d / "healthy-seed1.log"), str(d / "healthy-seed2.log")])
    rs.set_ranges(base.ranges, "baseline")
    assert all(r.status == "loading" for r in rs.rows())
    rows = rs.load_all()
    assert {r.ranges for r in rows} == {"baseline"}
    assert {r.name: r.status for r in rows}["gap-jump.log"] == "critical"
    rs.close()


def test_baseline_judges_like_check_with_calibrated_file(tmp_path):
    out = tmp_path / "ranges.toml"
    assert main(["calibrate", *SEEDS[:2], "-o", str(out)]) == 0
    a = judge_path(GAP, load_ranges(str(out))).report()
    b = judge_path(GAP, load_baseline(SEEDS[:2]).ranges, ranges_label="baseline").report()
    assert [(x.rule, x.signal, x.rollout) for x in a.alerts] == [(x.rule, x.signal, x.rollout) for x in b.alerts]
    assert {k: s.status for k, s in a.signals.items()} == {k: s.status for k, s in b.signals.items()}
    assert [s.id for s in SIGNALS]


# ---------------------------------------------------------------------- export of several runs
def test_export_several_runs_one_table_with_run_column(tmp_path, capsys):
    import csv
    import io

    code = main(["export", SEEDS[0], GAP, "--format", "json"])
    many = json.loads(capsys.readouterr().out)
    assert code == 0 and list(many[0])[0] == "run"
    for path in (SEEDS[0], GAP):
        assert main(["export", path, "--format", "json"]) == 0
        one = json.loads(capsys.readouterr().out)
        mine = [{k: v for k, v in r.items() if k != "run"} for r in many if r["run"] == Path(path).name]
        assert mine == one  # each run's rows are `export RUN`'s
    d = _folder(tmp_path, ["healthy-seed1.log", "no-steps.log", "gap-jump.log"])
    out = tmp_path / "all.csv"
    assert main(["export", str(d), "--axis", "step", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "no-steps.log" in err  # no metric lines: said, not silent
    table = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["run"] for r in table} == {"gap-jump.log", "healthy-seed1.log"}
    assert list(table[0])[:3] == ["run", "step", "rollout"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", str(empty)]) == 1


def test_folders_hold_jsonl_inputs_but_not_miles_dashboard_streams(tmp_path, capsys):
    """check -r picks metrics.jsonl and other *.jsonl (verl's file logger, ms-swift's
    logging.jsonl) beside *.log; in Miles' dashboard folder only metrics.jsonl (#41)."""
    metrics = Path(__file__).resolve().parents[1] / "fixtures" / "metrics.jsonl"
    dump = tmp_path / "dump" / "dashboard"
    (dump / "gpu_util").mkdir(parents=True)
    shutil.copy(metrics, dump / "metrics.jsonl")
    for noise in (dump / "phases.jsonl", dump / "gpu_util" / "20260821_10.jsonl", tmp_path / ".hidden.jsonl"):
        noise.write_text('{"name": "rollout", "t0": 1.0}\n')
    verl = tmp_path / "verl" / "exp.jsonl"
    verl.parent.mkdir()
    verl.write_text(
        "".join(f'{{"step":{i},"data":{{"critic/score/mean":0.5,"actor/grad_norm":null}}}}\n' for i in range(1, 6))
    )
    shutil.copy(SEEDS[0], tmp_path / "a.log")
    found = discover([str(tmp_path)], recursive=True)
    assert [os.path.relpath(p, tmp_path) for p in found] == ["a.log", "dump/dashboard/metrics.jsonl", "verl/exp.jsonl"]
    assert [os.path.relpath(p, tmp_path) for p in discover([str(tmp_path)])] == ["a.log"]
    main(["check", "--json", "-r", str(tmp_path)])
    out = capsys.readouterr().out
    assert "metrics.jsonl" in out and "exp.jsonl" in out
