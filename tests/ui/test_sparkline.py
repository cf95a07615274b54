"""Sparklines show the problem: the scale includes the healthy band, cells outside it are marked
(a style that survives NO_COLOR, a shape in ASCII), log signals on log10, whole-run buckets keep
spikes; rows read value, mean5, range and badge at the cursor's rollout."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grpo_tui.ui.app import GrpoApp
from grpo_tui.ui.signal_row import SignalRow
from grpo_tui.ui.sparkline import BLOCKS, spark_text, whole_run_cells

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def _glyph_levels(text) -> list[int]:
    return [BLOCKS.index(c) for c in text.plain if c in BLOCKS]


def test_jump_above_the_band_reads_as_a_jump_not_noise():
    ids = np.arange(20)
    vals = np.r_[np.full(10, 0.015), np.full(10, 0.045)] + np.tile([0.0, 0.0004], 10)
    band = (np.full(20, 0.0136), np.full(20, 0.0164))
    t = spark_text(ids, ids, vals, None, band=band, log=True)
    levels = _glyph_levels(t)
    assert max(levels[:10]) <= 2 and min(levels[10:]) >= 6
    # without the band in the scale, min-max scaling of the pre-jump noise alone fills the height
    noise_only = _glyph_levels(spark_text(ids[:10], ids[:10], vals[:10], None))
    assert max(noise_only) - min(noise_only) == 7
    # cells outside the band carry the out-of-band style (underline survives NO_COLOR)
    styles = [str(span.style) for span in t.spans]
    assert sum("underline" in s for s in styles) == 10


def test_ascii_marks_outside_cells_with_a_shape():
    ids = np.arange(6)
    vals = np.array([0.5, 0.5, 0.9, 0.1, 0.5, np.nan])
    band = (np.full(6, 0.3), np.full(6, 0.7))
    t = spark_text(ids, ids, vals, None, ascii=True, band=band)
    assert t.plain[2] == "^" and t.plain[3] == "v" and t.plain[5] == "!"
    assert all(ord(c) < 128 for c in t.plain)


def test_whole_run_keeps_a_single_spike_in_a_long_history():
    ids = np.arange(10_000)
    vals = np.full(10_000, 1.0)
    vals[1234] = 50.0
    first, cells, last = whole_run_cells(ids, ids, vals, 40, log=True)
    assert len(cells) == 40 and first[0] == 0 and last[-1] == 9999
    k = int(np.searchsorted(last, 1234))
    assert cells[k] == 50.0 and np.count_nonzero(cells == 50.0) == 1


async def test_row_reads_range_and_badge_at_the_cursor():
    """Cursor on rollout 5 of gap-jump.log: the gap row shows rollout 5's value, the 0-9 range
    and an ok badge; at the newest rollout the same row is critical."""
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        row = app.query_one("#sig-gap", SignalRow)
        assert "✗ crit" in row.render().plain
        app._set_cursor(5)
        await pilot.pause()
        text = row.render().plain
        assert "0.0141-0.0164" in text and "✓ ok" in text
        value = app.feed.store.current.value(5, "train/train_rollout_logprob_abs_diff")
        assert f"{value:.4f}" in text


async def test_whole_run_toggle_summarises_every_rollout():
    app = GrpoApp(str(LOGS / "gap-jump.log"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("w")
        row = app.query_one("#sig-gap", SignalRow)
        first, cells, last = row.cells
        assert first[0] == 0 and last[-1] == 47
        levels = _glyph_levels(row.render())
        assert levels[0] <= 2 and levels[-1] >= 6  # before and after the jump in one line
