"""CLI strictness: a misspelt command or an unknown theme is an error with a suggestion, not a
dashboard waiting for a file named `chek`; --version; the command palette offers the app's actions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grpo_tui import cli, process
from grpo_tui.ui.app import GrpoApp

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["chek", "x.log"], "did you mean `grpo-tui check`"),
        (["exprot", "x.log"], "did you mean `grpo-tui export`"),
        (["--theme", "neon", str(LOGS / "gap-jump.log")], "unknown theme 'neon'"),
        (["tial", "-"], "did you mean `grpo-tui tail`"),
    ],
)
def test_mistyped_words_are_errors(argv, needle, capsys):
    assert cli.main(argv) == 2
    assert needle in capsys.readouterr().err


def test_version():
    r = subprocess.run([sys.executable, "-m", "grpo_tui", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("grpo-tui ")


def test_known_themes_include_the_aliases_and_files():
    names = cli.known_themes()
    for n in ("dark", "light", "high-contrast", "ascii", "grpo-dark"):
        assert n in names


async def test_command_palette_offers_the_apps_actions():
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Go to rollout…" in titles and "Raw log at the cursor" in titles
        assert "Chart: log-prob gap" in titles and "Theme: ascii" in titles
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Theme: ascii")
        cmd.callback()
        await pilot.pause()
        assert app.theme == "grpo-ascii" and app.screen.has_class("ascii")


def test_output_dash_is_stdout(tmp_path, monkeypatch, capsys):
    """`-o -` writes to standard output, not to a file named "-"."""
    from grpo_tui.cli import main

    log = Path(__file__).resolve().parents[2] / "sample_logs" / "healthy-seed1.log"
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(log), "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("rollout,")
    assert main(["simulate", "--rollouts", "2", "-o", "-"]) == 0
    assert "rollout 1: {" in capsys.readouterr().out
    assert not (tmp_path / "-").exists()


def test_the_dashboard_leaves_at_once_once_its_app_has_closed(monkeypatch):
    """process.leave after the dashboard: its streams flushed, then os._exit with its code, the
    interpreter not torn down (a Textual input thread left spinning on a closed terminal kept
    that teardown waiting for ever); `tail` and `serve` still exit normally."""
    seen = []

    class Stream:
        def __init__(self, name):
            self.name = name

        def flush(self):
            seen.append(("flush", self.name))

    class Left(Exception):
        pass

    def fake_exit(code):
        seen.append(("_exit", code))
        raise Left

    monkeypatch.setattr(process.os, "_exit", fake_exit)
    monkeypatch.setattr(process.sys, "stdout", Stream("stdout"))
    monkeypatch.setattr(process.sys, "stderr", Stream("stderr"))
    with pytest.raises(Left):
        process.leave(143, "dashboard")
    assert seen == [("flush", "stdout"), ("flush", "stderr"), ("_exit", 143)]
    for cmd in ("tail", "serve", "simulate"):
        with pytest.raises(SystemExit):
            process.leave(0, cmd)
    assert "dashboard" not in process.QUICK_EXIT  # its collector stays on while it runs (one_shot)


def test_quick_exit_commands_leave_whole_output_and_their_codes(tmp_path):
    """`check`, `export` and `calibrate` leave the process without tearing the interpreter down
    (process.leave): their stdout (a pipe, block-buffered), stderr and files are whole and their
    exit codes are main()'s; the other commands exit as usual."""
    import json

    def run(*argv):
        return subprocess.run(
            [sys.executable, "-m", "grpo_tui", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
        )

    r = run("check", "--json", str(LOGS / "gap-jump.log"))
    assert r.returncode == 2 and json.loads(r.stdout)["status"] == "critical"
    r = run("check", str(LOGS / "healthy-seed1.log"))
    assert r.returncode == 0 and r.stdout.rstrip().endswith("0 cut records")
    r = run("check", str(tmp_path / "missing.log"))
    assert r.returncode == 3 and "no such file" in r.stderr
    r = run("export", str(LOGS / "healthy-seed1.log"))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 49 and "240 metric records" in r.stderr
    r = run("export", str(LOGS / "healthy-seed1.log"), "--format", "json", "-o", "out.json")
    assert r.returncode == 0 and len(json.loads((tmp_path / "out.json").read_text())) == 48
    seeds = [str(LOGS / f"healthy-seed{i}.log") for i in (1, 2, 3)]
    r = run("calibrate", *seeds, "-o", "ranges.toml")
    from grpo_tui.judge.ranges import load_ranges

    assert r.returncode == 0 and "wrote ranges.toml (9 signals)" in r.stderr
    got = load_ranges(str(tmp_path / "ranges.toml"))
    assert len(got.envelopes) + len(got.constant) == 9
    r = run("simulate", "--rollouts", "2", "-o", "-")
    assert r.returncode == 0 and "rollout 1:" in r.stdout
