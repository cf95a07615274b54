"""CLI strictness: a misspelt command or an unknown theme is an error with a suggestion, not a
dashboard waiting for a file named `chek`; --version; the command palette offers the app's actions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grpo_tui import cli
from grpo_tui.ui.app import GrpoApp

LOGS = Path(__file__).resolve().parents[1] / "sample_logs"


@pytest.mark.parametrize("argv,needle", [
    (["chek", "x.log"], "did you mean `grpo-tui check`"),
    (["exprot", "x.log"], "did you mean `grpo-tui export`"),
    (["--theme", "neon", str(LOGS / "gap-jump.log")], "unknown theme 'neon'"),
    (["tial", "-"], "did you mean `grpo-tui tail`"),
])
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
    log = Path(__file__).resolve().parents[1] / "sample_logs" / "healthy-seed1.log"
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(log), "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("rollout,")
    assert main(["simulate", "--rollouts", "2", "-o", "-"]) == 0
    assert "rollout 1: {" in capsys.readouterr().out
    assert not (tmp_path / "-").exists()
