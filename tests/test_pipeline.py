"""pipeline.py details no other test file owns: the bulk-read collector thresholds."""

import pytest
def test_bulk_reads_collect_less_and_put_the_thresholds_back(tmp_path):
    """A whole-file read raises the young-generation threshold (fewer collections over the
    records it keeps) and, nested or concurrent, the last reader out restores what was set."""
    import gc

    from grpo_tui import pipeline as pl
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
        with pytest.raises(RuntimeError):
            with pl._bulk_allocations():
                raise RuntimeError("reader failed")
        assert gc.get_threshold() == (123, 4, 5)
        pl.judge_path(str(log))
        assert gc.get_threshold() == (123, 4, 5)
    finally:
        gc.set_threshold(*saved)


def test_bulk_reads_leave_collection_off_when_the_program_turned_it_off():
    import gc

    from grpo_tui import pipeline as pl
    saved = gc.get_threshold()
    try:
        gc.set_threshold(0, 4, 5)
        with pl._bulk_allocations():
            assert gc.get_threshold() == (0, 4, 5)
        assert gc.get_threshold() == (0, 4, 5)
    finally:
        gc.set_threshold(*saved)


def test_scanning_ahead_shortens_the_switch_interval_and_puts_it_back(tmp_path):
    """While a reader thread scans ahead the GIL changes hands sooner (the reader is not kept
    waiting a whole 5 ms interval per block); nested, concurrent or failed reads put back what
    was set, and a shorter interval the program chose is left alone."""
    import sys

    from grpo_tui.lines import files
    saved = sys.getswitchinterval()
    log = tmp_path / "a.log"
    log.write_bytes(b"x\n" * 1000)
    try:
        sys.setswitchinterval(0.004)
        seen = []
        outer = files.iter_scanned_blocks(str(log), lambda b: len(b), chunk=512)
        seen.append((next(outer)[1], sys.getswitchinterval()))
        inner = files.iter_scanned_blocks(str(log), lambda b: len(b), chunk=512)
        next(inner)
        inner.close()
        seen.append(sys.getswitchinterval())
        assert sum(n for _, n in outer) > 0
        assert seen == [(seen[0][0], files._HANDOFF_S), files._HANDOFF_S]
        assert sys.getswitchinterval() == 0.004

        def boom(b):
            raise OSError("disk gone")
        with pytest.raises(OSError):
            list(files.iter_scanned_blocks(str(log), boom, chunk=512))
        assert sys.getswitchinterval() == 0.004
        sys.setswitchinterval(0.0002)
        assert list(files.iter_scanned_blocks(str(log), len, chunk=512))
        assert sys.getswitchinterval() == pytest.approx(0.0002)
    finally:
        sys.setswitchinterval(saved)
