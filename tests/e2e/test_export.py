"""`grpo-tui export` end to end on the sample log, plus bad input (docs/contracts.md §6.5, §7)."""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import subprocess
import sys

import pytest

from grpo_tui import cli
from grpo_tui.export import render, rows
from grpo_tui.lines.records import STORE_EVENT_KINDS
from grpo_tui.pipeline import judge_path

PY = sys.executable


def run_cli(*argv: str, capsys) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def export_json(path, capsys, *extra: str):
    code, out, err = run_cli("export", str(path), "--format", "json", *extra, capsys=capsys)
    assert code == 0, err
    assert "Traceback" not in err
    return json.loads(out)


def by(rows_, key, value):
    found = [r for r in rows_ if r.get(key) == value]
    assert len(found) == 1, (key, value, found)
    return found[0]


# --------------------------------------------------------------------------------------------
# the sample, rollout axis
# --------------------------------------------------------------------------------------------


def test_sample_json_rollout_axis(sample_path, capsys):
    data = export_json(sample_path, capsys)
    assert [r["rollout"] for r in data] == [3, 4, 19]
    assert all("segment" not in r for r in data)
    r3 = by(data, "rollout", 3)
    # perf 3 merged from the rollout manager line and the trainer line
    assert r3["perf/rollout_time"] == 187.2291259765625
    assert r3["perf/train_time"] == 60.3
    assert r3["perf/train_wait_time"] == 203.4
    assert r3["perf/longest_effective_sample_tokens_per_sec"] == 43.75
    # trainer rollout line
    assert r3["rollout/raw_reward"] == 0.4453125
    assert r3["rollout/rewards"] == -1.862645149230957e-09
    assert r3["rollout/response_lengths"] == 2210.41796875
    # ints stay ints
    assert r3["rollout/response_len/max"] == 8192 and isinstance(r3["rollout/response_len/max"], int)
    assert r3["rollout/zero_std/count_0"] == 5 and r3["rollout/zero_std/count_1"] == 3
    # steps 6 and 7 (K = 2) are averaged into rollout 3; step 7 has a nan grad norm
    assert r3["train/loss"] == pytest.approx((-0.00213 + 0.00102) / 2)
    assert r3["train/pg_clipfrac"] == pytest.approx((0.00061 + 0.00288) / 2)
    assert r3["train/lr-pg_0"] == pytest.approx(1e-06)
    assert r3["train/grad_norm"] is None
    assert r3["_nonfinite"] == {"train/grad_norm": "nan"}


def test_sample_passrate_numpy_values(sample_path, capsys):
    r4 = by(export_json(sample_path, capsys), "rollout", 4)
    assert r4["passrate/pass@1"] == 0.4609375
    assert r4["passrate/pass@2"] == 0.5848214285714286
    assert r4["passrate/pass@4"] == 0.6772321428571428
    assert r4["passrate/pass@8"] == 0.75
    assert r4["perf/rollout_time"] == 181.93
    assert r4["rollout/zero_std/count_0"] == 4
    assert "train/loss" not in r4 and "_nonfinite" not in r4


def test_sample_eval_19(sample_path, capsys):
    r19 = by(export_json(sample_path, capsys), "rollout", 19)
    assert r19 == {
        "rollout": 19,
        "eval/aime-none_reward_ratio": 0.0,
        "eval/aime": 0.2302,
        "eval/aime/response_len/mean": 9121.3,
        "eval/aime/response_len/median": 8740.0,
        "eval/aime/response_len/max": 16384,
        "eval/aime/response_len/min": 1422,
        "eval/aime/prefix_cache_hit_rate": 0.0,
        "eval/aime/avg_cached_tokens_per_sample": 0.0,
        "eval/aime/repetition_frac": 0.0021,
        "eval/aime/truncated_ratio": 0.0729,
        "eval/aime-truncated_ratio": 0.0729,
    }


def test_sample_look_alike_keys_not_merged(sample_path, capsys):
    data = export_json(sample_path, capsys)
    r3 = by(data, "rollout", 3)
    assert r3["rollout/truncated_ratio"] == 0.0390625
    assert r3["rollout/truncated"] == 0.0390625
    assert r3["rollout/response_len/mean"] == 2210.41796875
    assert "eval/aime/truncated_ratio" not in r3
    assert "rollout/truncated_ratio" not in by(data, "rollout", 19)


# --------------------------------------------------------------------------------------------
# the sample, step axis
# --------------------------------------------------------------------------------------------


def test_sample_json_step_axis(sample_path, capsys):
    data = export_json(sample_path, capsys, "--axis", "step")
    assert [(r["step"], r["rollout"]) for r in data] == [(6, 3), (7, 3)]  # doubled step 6 appears once
    s6, s7 = data
    assert s6["train/loss"] == -0.00213
    assert s6["train/grad_norm"] == 0.2144
    assert s6["train/ppo_kl"] == 2.1e-05
    assert s6["train/step"] == 6
    assert "_nonfinite" not in s6
    assert s7["train/grad_norm"] is None
    assert s7["_nonfinite"] == {"train/grad_norm": "nan"}
    assert s7["train/pg_clipfrac"] == 0.00288
    assert s7["train/ess_ratio"] == 0.9954


def test_sample_csv(sample_path, capsys):
    code, out, err = run_cli("export", str(sample_path), capsys=capsys)
    assert code == 0
    table = list(csv.DictReader(io.StringIO(out)))
    assert [r["rollout"] for r in table] == ["3", "4", "19"]
    header = out.splitlines()[0].split(",")
    assert header[0] == "rollout"
    # union of names in first-seen order: the rollout manager's perf 3 comes first
    assert header[1] == "rollout/response_len/mean"
    assert header.index("rollout/response_len/mean") < header.index("rollout/raw_reward") < header.index("eval/aime")
    assert len(header) == len(set(header))
    r3 = table[0]
    assert r3["perf/rollout_time"] == "187.2291259765625"
    assert r3["perf/train_time"] == "60.3"
    assert r3["rollout/rewards"] == "-1.862645149230957e-09"
    assert r3["rollout/response_len/max"] == "8192"
    assert r3["train/grad_norm"].lower() in ("", "nan")
    assert table[1]["passrate/pass@2"] == "0.5848214285714286"
    assert table[1]["train/loss"] == ""
    assert table[2]["eval/aime"] == "0.2302"


def test_sample_csv_step_axis(sample_path, capsys):
    code, out, _ = run_cli("export", str(sample_path), "--axis", "step", capsys=capsys)
    assert code == 0
    table = list(csv.DictReader(io.StringIO(out)))
    assert [(r["step"], r["rollout"]) for r in table] == [("6", "3"), ("7", "3")]
    assert table[0]["train/grad_norm"] == "0.2144"


def test_output_file(sample_path, tmp_path, capsys):
    out_file = tmp_path / "out.json"
    code, out, err = run_cli("export", str(sample_path), "--format", "json", "-o", str(out_file), capsys=capsys)
    assert code == 0 and out == ""
    data = json.loads(out_file.read_text())
    assert by(data, "rollout", 3)["perf/train_time"] == 60.3


def test_subprocess_entry_point(sample_path):
    proc = subprocess.run(
        [PY, "-m", "grpo_tui", "export", str(sample_path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    r3 = by(data, "rollout", 3)
    assert r3["perf/rollout_time"] == 187.2291259765625 and r3["perf/train_time"] == 60.3
    assert "Traceback" not in proc.stderr
    # the summary on stderr counts every line
    assert "46 lines" in proc.stderr


def test_render_matches_rows(sample_path):
    st = judge_path(str(sample_path), judging=False).store
    data = rows(st)
    assert [r["rollout"] for r in data] == [3, 4, 19]
    parsed = json.loads(render(st, "json"))
    assert parsed[0]["perf/train_time"] == 60.3


# --------------------------------------------------------------------------------------------
# restarts, look-alike keys, strings
# --------------------------------------------------------------------------------------------

RM = "(RolloutManager pid=7) [2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - "
EXEC = (
    'EXEC: export PYTHONUNBUFFERED=1 && ray job submit --address="http://127.0.0.1:8265" -- python3 '
    "/root/miles/train.py --rollout-batch-size 32 --n-samples-per-prompt 8 --global-batch-size 256"
)


def test_restart_segments_in_export(tmp_path, capsys):
    log = tmp_path / "restart.log"
    log.write_text(
        "\n".join(
            [
                EXEC,
                RM + "perf 0: {'rollout/raw_reward': 0.1}",
                RM + "perf 1: {'rollout/raw_reward': 0.2}",
                EXEC,
                RM + "perf 0: {'rollout/raw_reward': 0.3}",
                RM + "perf 1: {'rollout/raw_reward': 0.4}",
                RM + "perf 0: {'rollout/raw_reward': 0.5}",
            ]
        )
        + "\n"
    )
    data = export_json(log, capsys)
    assert [(r["segment"], r["rollout"], r["rollout/raw_reward"]) for r in data] == [
        (0, 0, 0.1),
        (0, 1, 0.2),
        (1, 0, 0.3),
        (1, 1, 0.4),
        (2, 0, 0.5),
    ]
    code, out, _ = run_cli("export", str(log), capsys=capsys)
    table = list(csv.DictReader(io.StringIO(out)))
    assert out.splitlines()[0].startswith("segment,rollout")
    assert [r["segment"] for r in table] == ["0", "0", "1", "1", "2"]


def test_look_alike_keys_in_export(tmp_path, capsys):
    log = tmp_path / "alike.log"
    log.write_text(
        "\n".join(
            [
                RM + "perf 0: {'rollout/zero_std/count_0.1': 3, 'rollout/zero_std/count_0': 7, "
                "'rollout/zero_std/count_0.0': 2, 'rollout/episode_raw_reward': 0.9, 'rollout/truncated_ratio': 0.25}",
                "(MegatronTrainRayActor pid=8) [2026-08-21 10:00:01.000 actor_cell0_rank0] log_utils.py:123 - rollout 0: "
                "{'rollout/raw_reward': 0.125, 'rollout/truncated': 0.375}",
                "(RolloutManager pid=7) [2026-08-21 10:00:02.000 rollout_manager] metrics.py:53 - eval 0: "
                "{'eval/x/truncated_ratio': 0.5, 'eval/x-truncated_ratio': 0.625}",
            ]
        )
        + "\n"
    )
    (r0,) = export_json(log, capsys)
    assert r0 == {
        "rollout": 0,
        "rollout/zero_std/count_0.1": 3,
        "rollout/zero_std/count_0": 7,
        "rollout/zero_std/count_0.0": 2,
        "rollout/episode_raw_reward": 0.9,
        "rollout/truncated_ratio": 0.25,
        "rollout/raw_reward": 0.125,
        "rollout/truncated": 0.375,
        "eval/x/truncated_ratio": 0.5,
        "eval/x-truncated_ratio": 0.625,
    }


def test_strings_bools_and_inf_in_export(tmp_path, capsys):
    log = tmp_path / "values.log"
    log.write_text(
        RM + "perf 2: {'custom/name': 'a, \"b\"', 'custom/flag': True, 'custom/x': -inf, "
        "'custom/y': np.float64(inf), 'custom/z': 1.5}\n"
    )
    (r,) = export_json(log, capsys)
    assert r["custom/name"] == 'a, "b"'
    assert r["custom/flag"] is True
    assert r["custom/x"] is None and r["custom/y"] is None
    assert r["_nonfinite"] == {"custom/x": "-inf", "custom/y": "inf"}
    assert r["custom/z"] == 1.5


@pytest.mark.parametrize("width", [80, 120, 171])
def test_wrapped_log_exports_exact_values(tmp_path, capsys, sample_lines, sample_path, width):
    # the sample hard-wrapped at a fixed column (as a paste would be) gives the same export
    wrapped = []
    for ln in sample_lines:
        wrapped.extend(ln[i : i + width] for i in range(0, max(len(ln), 1), width))
    log = tmp_path / "wrapped.log"
    log.write_bytes(("\n".join(wrapped) + "\n").encode("utf-8"))
    data = export_json(log, capsys)
    assert [r["rollout"] for r in data] == [3, 4, 19]
    r3 = by(data, "rollout", 3)
    assert r3["perf/rollout_time"] == 187.2291259765625
    assert r3["perf/train_time"] == 60.3
    assert r3["_nonfinite"] == {"train/grad_norm": "nan"}
    assert by(data, "rollout", 4)["passrate/pass@2"] == 0.5848214285714286
    assert by(data, "rollout", 19)["eval/aime-truncated_ratio"] == 0.0729
    # every value comes back exactly: the whole export equals the unwrapped one
    assert data == export_json(sample_path, capsys)
    steps = export_json(log, capsys, "--axis", "step")
    assert steps == export_json(sample_path, capsys, "--axis", "step")


# --------------------------------------------------------------------------------------------
# bad input: one line on stderr, non-zero exit, never a traceback
# --------------------------------------------------------------------------------------------


def assert_clean_failure(code: int, out: str, err: str) -> None:
    assert code != 0
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("grpo-tui")


def test_missing_file(tmp_path, capsys):
    code, out, err = run_cli("export", str(tmp_path / "nope.log"), capsys=capsys)
    assert_clean_failure(code, out, err)
    assert "nope.log" in err


def test_directory(tmp_path, capsys):
    assert_clean_failure(*run_cli("export", str(tmp_path), capsys=capsys))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read any file")
def test_permission_denied(tmp_path, capsys):
    log = tmp_path / "secret.log"
    log.write_text("step 1: {'train/loss': 1.0}\n")
    log.chmod(0)
    try:
        assert_clean_failure(*run_cli("export", str(log), capsys=capsys))
    finally:
        log.chmod(0o600)


def test_empty_file(tmp_path, capsys):
    log = tmp_path / "empty.log"
    log.write_bytes(b"")
    assert_clean_failure(*run_cli("export", str(log), capsys=capsys))


def test_binary_file(tmp_path, capsys):
    log = tmp_path / "junk.log"
    log.write_bytes(bytes(range(256)) * 64 + b"\x00\xff\xfe\n" * 50)
    assert_clean_failure(*run_cli("export", str(log), "--format", "json", capsys=capsys))


def test_log_without_metric_lines(tmp_path, capsys):
    log = tmp_path / "noise.log"
    log.write_text("[2026-08-21 09:50:11.402 main] wandb_utils.py:38 - W&B offline mode enabled.\nhello\n")
    assert_clean_failure(*run_cli("export", str(log), capsys=capsys))


@pytest.mark.parametrize(
    "argv",
    [
        ["export"],
        ["export", "x.log", "--format", "xml"],
        ["export", "x.log", "--axis", "time"],
        ["export", "x.log", "--bogus"],
        ["export", "x.log", "-o"],
    ],
)
def test_bad_flags(argv, capsys):
    assert_clean_failure(*run_cli(*argv, capsys=capsys))


def test_unwritable_output(sample_path, tmp_path, capsys):
    target = tmp_path / "no" / "such" / "dir" / "out.csv"
    assert_clean_failure(*run_cli("export", str(sample_path), "-o", str(target), capsys=capsys))


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02\n", b"just text\n", None])
def test_bad_input_subprocess(tmp_path, content):
    """As a user: one stderr line, no traceback. None: a missing file and a bad flag (neither
    reads the content, so they run once, not once per content)."""
    log = tmp_path / "bad.log"
    if content is None:
        cases = (["export", str(tmp_path / "missing.log")], ["export", "--format"])
    else:
        log.write_bytes(content)
        cases = (["export", str(log)],)
    for argv in cases:
        proc = subprocess.run([PY, "-m", "grpo_tui", *argv], capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0
        assert "Traceback" not in proc.stderr
        assert len([ln for ln in proc.stderr.splitlines() if ln.strip()]) == 1, proc.stderr


_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_EXPORT_LOGS = sorted(
    glob.glob(os.path.join(_TESTS, "..", "sample_logs", "*.log")) + glob.glob(os.path.join(_TESTS, "fixtures", "*.log"))
)


@pytest.mark.parametrize("path", _EXPORT_LOGS, ids=os.path.basename)
def test_export_reads_only_what_its_rows_hold_and_writes_the_same(path):
    """export's read keeps no noise line's time and makes no event but those the rows depend on
    (judge_path(rows_only=True)): every format and axis is what the full read gives, and so are
    the counts, the runs and their flags."""
    full = judge_path(path, judging=False)
    lean = judge_path(path, judging=False, rows_only=True)
    assert lean.parser.store_events_only and not lean.parser.noise_times
    assert full.parser.noise_times and not full.parser.store_events_only
    assert lean.parser.counts == full.parser.counts
    assert [s.flags for s in lean.store.segments] == [s.flags for s in full.store.segments]
    assert {e.kind for e in lean.store.events} <= STORE_EVENT_KINDS
    assert [e.line_no for e in lean.store.events] == [
        e.line_no for e in full.store.events if e.kind in STORE_EVENT_KINDS
    ]
    for fmt in ("csv", "json"):
        for axis in ("rollout", "step"):
            assert render(lean.store, fmt, axis) == render(full.store, fmt, axis)


def test_export_read_on_a_restarted_hostile_log(tmp_path):
    """The same on a log that restarts into the same file, holds a wrapped record, binary junk,
    header-less lines between many sources and a line cut at the end."""
    from grpo_tui.simulate import generate

    lines = [ln for _, ln in generate("healthy", 30, 2, noise_per_rollout=40)]
    lines += [ln for _, ln in generate("gap-jump", 20, 1, noise_per_rollout=20)]  # ids start again
    lines.insert(200, "\x1b[36m(MegatronTrainRayActor pid=7)\x1b[0m saving checkpoint at iteration 3 to /x")
    lines.insert(300, "rollout 12: {'rollout/raw_reward': 0.4,")
    lines.insert(301, "   'rollout/response_len/mean': 300.0}")
    p = tmp_path / "run.log"
    p.write_bytes("\n".join(lines).encode() + b"\n" + os.urandom(3000) + b"\nrollout 99: {'rollout/raw_re")
    full = judge_path(str(p), judging=False)
    lean = judge_path(str(p), judging=False, rows_only=True)
    assert len(full.store.segments) == len(lean.store.segments) >= 2
    assert lean.parser.counts == full.parser.counts
    for fmt in ("csv", "json"):
        for axis in ("rollout", "step"):
            assert render(lean.store, fmt, axis) == render(full.store, fmt, axis)
