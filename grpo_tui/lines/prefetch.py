"""Start reading a log while the program still imports (`check`, `export`).

Why: the CLI spends its first ~0.15 s importing the store, the rules and numpy, and only then
judge_path starts the reader thread; on a big log the reader (read + C walk) is the slower of the
two threads, so the parser waits for it all along.  Started right after the arguments are read,
the reader uses those 0.15 s: it reads up to AHEAD blocks before the first is parsed
(files.ScannedReader), and judge_path takes it over (`claim`) instead of starting its own.
Only this module, the reader and the C scanner are imported for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

from . import pure_asked
from .files import InputError, ScannedReader, check_readable, quick_handoff

AHEAD = 12  # blocks read before parsing starts: 96 MiB of judge_path's 8 MiB blocks (~0.15 s of reading)

_pending: ScannedReader | None = None


def _module():
    """The C scanner's module, where LineParser uses it (lines/native.py), or None (GRPO_TUI_PURE
    is read again here: a command may set it after the import)."""
    if pure_asked():
        return None
    from .native import SCAN

    return SCAN


def scanner() -> Callable[[Any], tuple] | None:
    """The C scanner's block walk, where LineParser.block_scan would give it (its module built,
    GRPO_TUI_PURE unset); None otherwise (nothing to read ahead with).  A stale build the parser
    refuses (native._load_scan) is never claimed: the reader then only costs its blocks."""
    return getattr(_module(), "scan_raw", None)


def start(path: str, chunk: int, ahead: int = AHEAD, untimed: bool = False) -> bool:
    """Begin reading `path` (a readable regular file) in blocks of `chunk` bytes; False when
    nothing was started.  One at a time: a second start replaces the first.  `untimed`: walked
    for a parser that keeps no noise line's time (export: LineParser.noise_times), whose
    block_scan is scan_raw_untimed; claim() gives it to no other."""
    global _pending
    mod = _module()
    scan = getattr(mod, "scan_raw_untimed" if untimed else "scan_raw", None)  # (scanner())
    if scan is None or path == "-":
        return False
    try:
        check_readable(path)
    except InputError:
        return False  # the command itself says why
    cancel()
    stack = ExitStack()
    stack.enter_context(quick_handoff())  # the reader's GIL handoffs, while imports run too
    try:
        reader = ScannedReader(
            path,
            scan,
            chunk,
            ahead=ahead,
            read_scan=getattr(mod, "read_scan", None),  # (LineParser.block_read_scan)
            untimed=untimed,
        )
    except BaseException:
        stack.close()
        raise
    reader.on_close(stack.close)
    _pending = reader
    return True


def claim(path: str, scan: Callable[[Any], tuple] | None, chunk: int, end: int | None) -> Iterator[tuple] | None:
    """The blocks read ahead for exactly this read (the same path, scanner, block size, to the
    file's end), taken over once; None when there are none."""
    global _pending
    r = _pending
    if r is None or scan is None or end is not None or r.path != path or r.chunk != chunk or r.scan is not scan:
        return None
    _pending = None
    return r.blocks()


def cancel() -> None:
    """Stop a reader no one claimed."""
    global _pending
    r, _pending = _pending, None
    if r is not None:
        r.close()


__all__ = ["AHEAD", "start", "claim", "cancel", "scanner"]
