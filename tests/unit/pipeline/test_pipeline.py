"""pipeline/whole_file.py details no other test file owns: the bulk-read collector thresholds and GIL handoff."""

import pytest

from grpo_tui.lines import files


def test_bulk_reads_collect_less_and_put_the_thresholds_back(tmp_path):
    """A whole-file read raises the young-generation threshold (fewer collections over the
    records it keeps) and, nested or concurrent, the last reader out restores what was set."""
    import gc

    from grpo_tui.pipeline import whole_file as pl

    saved = gc.get_threshold()
    try:
        gc.set_threshold(123, 4, 5)
        seen = []
        with pl._bulk_allocations():
            seen.append(gc.get_threshold())
            with pl._bulk_allocations():
                seen.append(gc.get_threshold())
            seen.append(gc.get_threshold())
        assert seen == [(pl._GC_BULK_GEN0, 4, 5)] * 3
        assert gc.get_threshold() == (123, 4, 5)
        log = tmp_path / "a.log"
        log.write_text("rollout 0: {'rollout/raw_reward': 0.5}\n")
        with pytest.raises(RuntimeError), pl._bulk_allocations():
            raise RuntimeError("reader failed")
        assert gc.get_threshold() == (123, 4, 5)
        pl.judge_path(str(log))
        assert gc.get_threshold() == (123, 4, 5)
    finally:
        gc.set_threshold(*saved)


def test_bulk_reads_leave_collection_off_when_the_program_turned_it_off():
    import gc

    from grpo_tui.pipeline import whole_file as pl

    saved = gc.get_threshold()
    try:
        gc.set_threshold(0, 4, 5)
        with pl._bulk_allocations():
            assert gc.get_threshold() == (0, 4, 5)
        assert gc.get_threshold() == (0, 4, 5)
    finally:
        gc.set_threshold(*saved)


def test_whole_file_reads_shorten_the_switch_interval_and_put_it_back(tmp_path):
    """While judge_path reads (its reader thread scans ahead) the GIL changes hands sooner;
    nested, concurrent or failed reads put back what was set, a shorter interval the program
    chose is left alone, and the dashboard's fill (feed_file) leaves it as it is."""
    import sys

    from grpo_tui.pipeline import whole_file as pl

    saved = sys.getswitchinterval()
    log = tmp_path / "a.log"
    log.write_text("rollout 0: {'rollout/raw_reward': 0.5}\n")
    seen = []
    real = pl._file_blocks

    def spy(*a, **k):
        seen.append(sys.getswitchinterval())
        return real(*a, **k)

    try:
        sys.setswitchinterval(0.004)
        pl._file_blocks = spy
        with pl._quick_handoff():
            seen.append(sys.getswitchinterval())
            pl.judge_path(str(log))
            seen.append(sys.getswitchinterval())
        pl.judge_path(str(log))
        assert seen == [files.HANDOFF_S] * 4 and sys.getswitchinterval() == 0.004
        with pytest.raises(RuntimeError), pl._quick_handoff():
            raise RuntimeError("reader failed")
        assert sys.getswitchinterval() == 0.004
        seen.clear()
        pl.feed_file(pl.Pipeline(), str(log))
        assert seen == [0.004]
        sys.setswitchinterval(0.0002)
        pl.judge_path(str(log))
        assert seen[-1] == pytest.approx(0.0002) and sys.getswitchinterval() == pytest.approx(0.0002)
    finally:
        pl._file_blocks = real
        sys.setswitchinterval(saved)
