"""The alert pane lists a sign that opens and clears again and again once, with its count
(issue #40, item 3; the log: tests/e2e/test_flapping.py)."""

from __future__ import annotations

from tests.e2e.test_flapping import write_flapping


async def test_alert_pane_shows_one_row_per_sign(tmp_path):
    flapping = write_flapping(tmp_path / "flap.log")
    from grpo_tui.ui.alert_pane import AlertPane
    from grpo_tui.ui.app import GrpoApp

    app = GrpoApp(str(flapping), live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        pane = app.query_one(AlertPane)
        assert pane.table.row_count == 1 and pane.groups[0].count == 37
        cells = [str(c) for c in pane.table.get_row_at(0)]
        assert cells[3].startswith("37× cut share five-step mean")
        await pilot.press("a")  # acknowledge: the sign, however often it was raised
        assert all(a.acknowledged for a in pane.groups[0].alerts)
