"""A whole file (or stdin) through the pipeline: `check`, `export`, `calibrate` and the dashboard's
history fill.  Read with lines/files.read_blocks, judged in bulk (Pipeline.defer / settle), with the
process settings that a whole-file read earns (fewer young collections, a short GIL handoff)."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..judge.mismatch import BulkMismatch
from ..lines import prefetch
from ..lines.files import BULK_CHUNK, CHUNK, InputError, check_readable, quick_handoff as _quick_handoff, read_blocks
from ..shared_override import SharedOverride
from .core import Pipeline

if TYPE_CHECKING:
    from ..judge.ranges import RangeSet
    from ..sidecar.source import Sidecar


def judge_path(
    path: str,
    ranges: RangeSet | None = None,
    *,
    ranges_label: str | None = None,
    now: float | None = None,
    judging: bool = True,
    bulk: bool = True,
    rows_only: bool = False,
) -> Pipeline:
    """A whole file (or '-') through the pipeline, judged at `now` like a live run would be
    (`judging=False`: the store only, for export; `rows_only` as well: only what export's rows
    hold is kept - no noise line's time, no event but those the rows depend on: LineParser's
    noise_times and store_events_only).  A file is judged in bulk (`bulk`): the
    same alerts as rollout by rollout, computed for the whole history at once; in the rare
    case where they could differ (rows rewritten after their rollout was judged) the file is
    read again and judged rollout by rollout.  A TensorBoard folder or a W&B offline run (sidecar/)
    is read whole through Pipeline.feed_items, judged the same way."""
    side = open_input(path)
    if side is not None:
        return _judge_sidecar(side, ranges, ranges_label, now, judging, bulk)
    check_readable(path)
    if path == "-" and bulk and judging:
        return _judge_stdin(ranges, ranges_label, now)

    def fresh() -> Pipeline:
        pipe = Pipeline(ranges, ranges_label=ranges_label, judging=judging)
        lean = rows_only and not judging  # (judging reads times and events)
        pipe.parser.noise_times = not lean
        pipe.parser.store_events_only = lean
        return pipe

    with _quick_handoff():
        pipe = read_judged(
            fresh,
            lambda pipe: feed_file(pipe, path, chunk=BULK_CHUNK),
            lambda pipe: pipe.finish(now),
            bulk=bulk and path != "-",
        )
    assert pipe is not None  # (nothing cancels it)
    return pipe


def read_judged(
    fresh: Callable[[], Pipeline],
    feed: Callable[[Pipeline], bool],
    done: Callable[[Pipeline], object],
    bulk: bool = True,
) -> Pipeline | None:
    """A whole input fed (`feed`, False: cancelled) into a new pipeline (`fresh`), then `done`
    (finish, or settle in the dashboard), judged in bulk: the same alerts as rollout by rollout,
    computed for the whole history at once; in the rare case where they could differ (rows
    rewritten after their rollout was judged: BulkMismatch) the input is fed again into a new
    pipeline judging rollout by rollout.  None when the feed was cancelled.  (A pipe can't be
    fed twice: `check -` spools it, _judge_stdin.)"""

    def read(pipe: Pipeline) -> Pipeline | None:
        if not feed(pipe):
            return None
        with _bulk_allocations(), _packed(pipe):  # (the end of the read: its last record, the judging)
            done(pipe)
        return pipe

    pipe = fresh()
    if bulk:
        pipe.defer()
    try:
        return read(pipe)
    except BulkMismatch:
        return read(fresh())


def open_input(path: str) -> Sidecar | None:
    """The run's metric files when `path` is a TensorBoard folder or a W&B offline run (a
    folder holding one), else None: a log. Several runs there: InputError, in one line."""
    if path == "-" or not (path.endswith(".wandb") or os.path.isdir(path)):
        return None  # a log (reading one imports no metric-file reader)
    from ..sidecar.source import SidecarError, open_sidecar

    try:
        return open_sidecar(path)
    except SidecarError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None


_NAMING = frozenset({"tensorboard", "wandb"})  # the events that name a run's metric folder


def named_inputs(pipe: Pipeline, path: str) -> list[tuple[str, str, bool]]:
    """The metric folders the log says its run writes ("Saving tensorboard log to DIR"), as
    (kind, folder, found): a relative folder is looked for beside the log, then here."""
    seen: dict[str, tuple[str, str, bool]] = {}
    base = os.path.dirname(os.path.abspath(path)) if path != "-" else os.getcwd()
    for seg in pipe.store.segments:
        for ev in seg.events.of_kinds(_NAMING):
            where = ev.data.get("dir")
            if not isinstance(where, str) or where in seen:
                continue
            tries = [where] if os.path.isabs(where) else [os.path.join(base, where), where]
            found = next((t for t in tries if os.path.isdir(t)), None)
            seen[where] = (ev.kind, found or where, found is not None)
    return list(seen.values())


def one_run(path: str) -> bool:
    """Whether `path` is one run's input: a file, or a folder of one run's metric files (a folder
    of logs, or of several runs' metric files, is many runs)."""
    if not os.path.isdir(path):
        return True
    from ..sidecar.source import run_paths

    try:
        return len(run_paths(path)) == 1
    except OSError:
        return True  # (an unreadable folder: judging it says why, in one line)


def metric_runs(path: str) -> list[str]:
    """The runs a folder holds as metric files (sidecar.source.run_paths), [] for a folder of logs."""
    from ..sidecar.source import run_paths

    try:
        return run_paths(path)
    except OSError:
        return []


def _judge_sidecar(
    side: Sidecar, ranges: RangeSet | None, ranges_label: str | None, now: float | None, judging: bool, bulk: bool
) -> Pipeline:
    """A finished read of a run's metric files: every record in the order it was logged."""
    items = side.read(final=True)

    def fresh() -> Pipeline:
        pipe = Pipeline(ranges, ranges_label=ranges_label, judging=judging)
        pipe.input = side.kind
        return pipe

    def feed(pipe: Pipeline) -> bool:
        pipe.feed_items(items, written_at=side.written_at() or pipe.clock())
        return True

    pipe = read_judged(fresh, feed, lambda pipe: pipe.finish(now), bulk=bulk)
    assert pipe is not None  # (nothing cancels it)
    pipe.input_files = len(side.files())
    pipe.input_problems = {k: v for k, v in side.problems.items() if v}
    if side.problems and not items:
        raise InputError(f"{side.path}: no readable metric in its {side.kind.label} files ({_problems(side)})")
    return pipe


def _problems(side: Sidecar) -> str:
    return ", ".join(f"{n} {what}" for what, n in sorted(side.problems.items()))


def _judge_stdin(ranges: RangeSet | None, ranges_label: str | None, now: float | None) -> Pipeline:
    """judge_path("-"): judged in bulk as a file is.  Why: a pipe can't be read twice, so where
    bulk judging could differ (BulkMismatch) its input could not be fed again, and `check -` was
    judged rollout by rollout all along (2.1 s for a 55 MB log against 0.21 s for the file).  Each
    block read is also written to a spool file (unlinked: it goes when we do) with when it came;
    on a BulkMismatch those blocks are fed again from it, rollout by rollout, at the same times,
    and the rest of the input after them.  A spool that can't be made or written (a full disk)
    ends the bulk part where it failed: what was read is judged then (settle; from the spool if
    that could differ) and the rest rollout by rollout, as before."""

    def fresh() -> Pipeline:
        pipe = Pipeline(ranges, ranges_label=ranges_label)
        pipe.parser.packed = PACK_RECORDS  # (as _packed: nobody reads the feeds' Updates)
        return pipe

    def again() -> Pipeline:  # the blocks kept so far, rollout by rollout
        pipe = fresh()
        spool.seek(0)
        for size, at in kept:
            pipe.feed(spool.read(size), written_at=at)
        return pipe

    pipe = fresh().defer()
    spool = _open_spool()
    kept: list[tuple[int, float]] = []  # (size, arrival time) of each block spooled
    if spool is None:
        pipe.settle()
    try:
        with _bulk_allocations(), _quick_handoff():
            blocks = iter(_file_blocks(pipe, "-", BULK_CHUNK))
            try:
                for block, scanned in blocks:
                    at = pipe.clock()
                    if pipe.engine.deferred and not _spool_block(spool, kept, block, at):
                        try:
                            pipe.settle()  # the spool is full: judge what was read
                        except BulkMismatch:
                            pipe = again()
                    pipe.feed(block, written_at=at, scanned=scanned)
                pipe.finish(now)
            except BulkMismatch:
                pipe = again()
                for block, scanned in blocks:
                    pipe.feed(block, written_at=pipe.clock(), scanned=scanned)
                pipe.finish(now)
    finally:
        pipe.parser.packed = False
        if spool is not None:
            spool.close()
    return pipe


def _open_spool():
    """An unnamed temporary file for _judge_stdin's blocks, or None when none can be made."""
    import tempfile  # (only for `-`: every other command's start would pay for it)

    try:
        return tempfile.TemporaryFile(prefix="grpo-tui-stdin-")
    except OSError:
        return None


def _spool_block(spool, kept: list, block, at: float) -> bool:
    """Append a block to the spool (kept: its size and arrival time); False when it can't be
    written, the spool then cut back to the blocks before it."""
    if spool is None:
        return False
    end = spool.tell()
    try:
        spool.write(block)
        spool.flush()
    except OSError:
        try:
            spool.seek(end)
            spool.truncate()
        except OSError:
            pass
        return False
    kept.append((len(block), at))
    return True


@contextmanager
def _packed(pipe: Pipeline) -> Iterator[None]:
    """While a whole file is read (judge_path, feed_file): the feeds' Updates are not read, so
    its common records may carry packed values (LineParser.packed); live feeds after it make
    dicts again."""
    parser = pipe.parser
    parser.packed = PACK_RECORDS
    try:
        yield
    finally:
        parser.packed = False


PACK_RECORDS = True  # tests turn it off to compare (tests/test_packed.py)


def feed_file(
    pipe: Pipeline,
    path: str,
    start: int = 0,
    end: int | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk: int = CHUNK,
) -> bool:
    """Feed the complete lines of bytes [start, end) of a file, stamped with its mtime (a pipe:
    each block with when it came).

    Returns False if `cancelled()` said stop (the dashboard quitting or the file restarting):
    between blocks, so within one block's parse (tens of ms)."""
    written = _mtime(path)
    done = 0
    span = max(1, (end if end is not None else max(1, _size(path))) - start)
    with _bulk_allocations(), _packed(pipe):
        for block, scanned in _file_blocks(pipe, path, chunk, start, end):
            if cancelled is not None and cancelled():
                return False
            pipe.feed(block, written_at=written if written is not None else pipe.clock(), scanned=scanned)
            done += len(block) + 1
            if progress is not None:
                progress(min(1.0, done / span))
    return True


_GC_BULK_GEN0 = 50_000  # objects between young collections while a file is read whole

# Fewer young-generation collections while a whole file is read.  Why: a big log makes
# millions of objects that live on (records, events, step rows) and next to no cycles; at the
# default threshold (700) a big log's read collects hundreds of times, walking what lives on
# (benchmarks/README.md).  Collection turned off by the program (threshold 0) is left off.
_bulk_allocations = SharedOverride(
    gc.get_threshold,
    lambda t: gc.set_threshold(*t),
    lambda saved: (max(_GC_BULK_GEN0, saved[0]), *saved[1:]) if saved[0] else None,
)


def _file_blocks(
    pipe: Pipeline, path: str, chunk: int = CHUNK, start: int = 0, end: int | None = None
) -> Iterator[tuple]:
    """(block, scanned) for the lines of bytes [start, end) of a file (read_blocks); when the
    parser scans blocks, the next one is read and C-scanned by a reader thread while this one is
    parsed, or was read ahead since the CLI started (lines/prefetch.py: check, export)."""
    scan = pipe.parser.block_scan
    ahead = prefetch.claim(path, scan, chunk, end) if start == 0 else None
    if ahead is not None:
        return ahead
    return read_blocks(
        path,
        chunk,
        start=start,
        end=end,
        scan=scan,
        read_scan=pipe.parser.block_read_scan,
        untimed=not pipe.parser.noise_times,
    )


def _mtime(path: str) -> float | None:
    if path == "-":
        return None
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
