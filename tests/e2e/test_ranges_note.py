"""A run the manual's default ranges don't fit says so on every surface (ranges "none" + why),
instead of a table of `n/a` badges left unexplained."""

from __future__ import annotations

import json

import pytest

from grpo_tui.cli import main
from grpo_tui.simulate import generate
from grpo_tui.ui.app import GrpoApp


def _write(path, setup):
    path.write_text("\n".join(line for _, line in generate("healthy", 24, 5, setup=setup)) + "\n")
    return str(path)


def test_check_names_why_no_range_judges_another_setup(tmp_path, capsys):
    log = _write(tmp_path / "long.log", "long")
    main(["check", log])
    out = capsys.readouterr().out
    assert "; ranges: none" in out
    assert "no range judges this run (trend and event rules only): the launch line names" in out
    main(["check", "--json", log])
    obj = json.loads(capsys.readouterr().out)
    assert obj["ranges"] == "none" and "launch line" in obj["ranges_note"]


def test_check_on_the_manuals_setup_uses_defaults(tmp_path, capsys):
    log = _write(tmp_path / "manual.log", "manual")
    main(["check", "--json", log])
    obj = json.loads(capsys.readouterr().out)
    assert obj["ranges"] == "defaults" and obj["ranges_note"] is None


@pytest.mark.asyncio
async def test_dashboard_status_line_says_no_range_fits(tmp_path):
    app = GrpoApp(_write(tmp_path / "long.log", "long"), live=False)
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(100):
            if app.feed.store.current.has_data and app.loading is None:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        assert "no range fits: trends only" in app._status_text().plain
