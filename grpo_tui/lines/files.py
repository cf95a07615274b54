"""Read a log file as blocks of complete lines: one pass, bounded memory, binary-safe.

The pipeline (grpo_tui/pipeline.py) feeds these blocks to the parser for `check`, `export`,
`calibrate` and the dashboard's history fill.
"""

from __future__ import annotations

import os
from typing import Iterator


CHUNK = 4 << 20


class InputError(Exception):
    """A clear one-line reason the input can't be read (shown as is, never a traceback)."""


def check_readable(path: str) -> None:
    """Raise InputError for a missing file, a folder, or no permission."""
    if path == "-":
        return
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory (give a log file)")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")


def iter_line_blocks(path: str, chunk: int = CHUNK, start: int = 0,
                     end: int | None = None) -> Iterator[list[str]]:
    """Lists of complete lines, one list per read chunk (split on b'\\n' only).

    With `start` > 0 reading begins at the first line that starts at or after it; with `end`
    it stops there and a last line without its newline is left out (the dashboard reads a
    file's tail first, then the rest, this way).
    """
    try:
        f = open(path, "rb") if path != "-" else os.fdopen(os.dup(0), "rb")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    with f:
        pos = _seek_line_start(f, start, chunk) if start > 0 else 0
        if pos is None:
            return
        rest = b""
        while end is None or pos < end:
            try:
                block = f.read(chunk if end is None else min(chunk, end - pos))
            except OSError as exc:
                raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None
            if not block:
                break
            pos += len(block)
            block = rest + block
            cut = block.rfind(b"\n")
            if cut < 0:
                rest = block
                continue
            rest = block[cut + 1:]
            yield block[:cut].decode("utf-8", "replace").split("\n")
        if rest and end is None:
            yield [rest.decode("utf-8", "replace")]


def _seek_line_start(f, start: int, chunk: int) -> int | None:
    """Position f at the first line beginning at or after `start`; None if there is none."""
    pos = start - 1
    f.seek(pos)
    while True:
        b = f.read(chunk)
        if not b:
            return None
        i = b.find(b"\n")
        if i >= 0:
            pos += i + 1
            f.seek(pos)
            return pos
        pos += len(b)


def iter_lines(path: str, chunk: int = CHUNK) -> Iterator[str]:
    """Complete lines one by one (see iter_line_blocks)."""
    for block in iter_line_blocks(path, chunk):
        yield from block
