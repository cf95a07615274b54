"""The core never imports Textual (docs/contracts.md §2): checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CORE = [
    "grpo_tui.lines.values",
    "grpo_tui.lines.records",
    "grpo_tui.lines.parse",
    "grpo_tui.lines.launch",
    "grpo_tui.store.metric_store",
    "grpo_tui.lines.files",
    "grpo_tui.export",
    "grpo_tui.commands.export_cmd",
    # written in parallel; skipped while they do not exist
    "grpo_tui.judge.engine",
    "grpo_tui.judge.signals",
    "grpo_tui.judge.ranges",
    "grpo_tui.follow.follower",
    "grpo_tui.simulate",
    "grpo_tui.judge.stats",
    "grpo_tui.judge.calibration",
    "grpo_tui.judge.rules",
    "grpo_tui.pipeline",
    "grpo_tui.follow.replay",
    "grpo_tui.commands.check_cmd",
    "grpo_tui.commands.tail_cmd",
    "grpo_tui.commands.calibrate_cmd",
    "grpo_tui.commands.simulate_cmd",
]

SCRIPT = r"""
import importlib, importlib.util, json, sys
loaded, missing = [], []
for name in json.loads(sys.argv[1]):
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        missing.append(name)
        continue
    importlib.import_module(name)
    loaded.append(name)
bad = sorted(m for m in sys.modules if m == "textual" or m.startswith(("textual.", "textual_plotext")))
print(json.dumps({"loaded": loaded, "missing": missing, "bad": bad}))
"""


def test_core_does_not_import_textual():
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CORE)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "grpo_tui.lines.parse" in res["loaded"] and "grpo_tui.store.metric_store" in res["loaded"]
    assert res["bad"] == [], f"core modules pulled in {res['bad']}"


def test_export_command_does_not_import_textual(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5}\n")
    code = (
        "import sys; from grpo_tui import cli; rc = cli.main(['export', sys.argv[1]]); "
        "assert 'textual' not in sys.modules, 'textual imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "perf/rollout_time" in proc.stdout


def test_check_and_export_of_a_file_do_not_start_the_follower_machinery(tmp_path):
    """`check` and `export` of a file never follow it: asyncio and watchfiles (the follower's)
    stay unimported, ~60 ms of every such command's start (issue #11: a few grep-times)."""
    log = tmp_path / "a.log"
    log.write_text("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5}\n")
    code = (
        "import sys, io, contextlib; from grpo_tui import cli\n"
        "for cmd in ('check', 'export'):\n"
        "    with contextlib.redirect_stdout(io.StringIO()): cli.main([cmd, sys.argv[1]])\n"
        "print(sorted(m for m in ('asyncio', 'watchfiles', 'textual') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_export_does_not_import_the_judge(tmp_path):
    """`export` reads no verdict: the health engine, its rules and signals stay unimported (they
    come with a pipeline that judges), and the pipeline still catches BulkMismatch."""
    log = tmp_path / "a.log"
    log.write_text("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5}\n")
    code = (
        "import sys, io, contextlib; from grpo_tui import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()): rc = cli.main(['export', sys.argv[1]])\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith('grpo_tui.judge.') and m != 'grpo_tui.judge.mismatch'))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 []"
    from grpo_tui import pipeline
    from grpo_tui.judge import bulk

    assert pipeline.BulkMismatch is bulk.BulkMismatch


def test_csv_export_of_a_common_log_does_not_import_numpy(tmp_path):
    """With the C accelerator, `export` (CSV) of a run whose rows come in rollout order reads its
    table without numpy (store/rollout_table.py), nan and text cells too; rows out of order (an
    eval logged ahead) import it.  Each gives the CSV of the numpy table (test_export_table.py)."""
    from grpo_tui.lines.native import SCAN

    if getattr(SCAN, "col_means", None) is None:
        pytest.skip("the C accelerator is not built (or GRPO_TUI_PURE)")
    from grpo_tui.simulate import generate

    lines = [ln for _, ln in generate("healthy", 30, 1, steps_per_rollout=2, noise_per_rollout=3)]
    odd = "\n".join(lines).replace("'train/grad_norm': ", "'train/grad_norm': nan, 'x': 'a', 'y': ", 1)
    at = next(i for i, ln in enumerate(lines) if "rollout 5: {" in ln)
    ahead = lines[: at + 1] + [lines[at].replace("rollout 5: {", "eval 99: {")] + lines[at + 1 :]
    code = (
        "import sys, io, contextlib; from grpo_tui import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out: rc = cli.main(['export', sys.argv[1]])\n"
        "print(rc, 'numpy' in sys.modules, len(out.getvalue().splitlines()))"
    )
    got = []
    for name, text in (("plain", "\n".join(lines)), ("odd", odd), ("ahead", "\n".join(ahead))):
        log = tmp_path / f"{name}.log"
        log.write_text(text + "\n")
        proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        got.append(proc.stdout.strip().splitlines()[-1])
    assert got == ["0 False 31", "0 False 31", "0 True 32"]
