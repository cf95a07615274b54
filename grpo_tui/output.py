"""Everything grpo-tui writes for a person or another program: files, CSV cells, text lines.

Why one module: docs/contracts.md §7 says log text must never reach a terminal as escapes, a
spreadsheet as a formula, or the log's own folder as a file.  The commands share these
few helpers so each rule is enforced in one place.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TextIO

from .lines.files import InputError

# C0 and C1 control characters, DEL, and the bidi embeddings/overrides/isolates that can
# make text read differently from what it is (CVE-2021-42574, "Trojan Source").
_UNSAFE = [*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SAFE_TABLE = dict.fromkeys(_UNSAFE) | {0x09: " ", 0x0A: " ", 0x0D: " "}


def fmt_age(seconds: float) -> str:
    """A short human age or duration, the one every surface prints: 40 s, 12 min, 3.5 h, 2.0 d."""
    s = max(0.0, seconds)
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    if s < 48 * 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def safe_text(text: object) -> str:
    """`text` as one printable line: control chars and bidi overrides removed.

    Tabs and line breaks become spaces, so a message built from log text stays one line and
    an ESC can't start a terminal sequence (the `[31m` that follows it stays harmless text).
    """
    return str(text).translate(_SAFE_TABLE)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.I)


def _is_number(s: str) -> bool:
    return _NUMBER.fullmatch(s) is not None


def csv_safe(value: object) -> object:
    """A CSV cell a spreadsheet will show, not run (OWASP "CSV injection").

    Only strings are touched: one starting with = + - @ TAB or CR gets a leading `'`.
    Numbers stay numbers (-0.5 is data, not a formula), and so do strings that are
    plain numbers, such as "-0.5" or "-inf".
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _is_number(value):
        return "'" + value
    return value


# -------------------------------------------------------------------------- output files


def xdg_dir(var: str, fallback: str, environ=None) -> str:
    """grpo-tui's folder under an XDG base (XDG_CONFIG_HOME, XDG_STATE_HOME): the variable when
    it is an absolute path (the spec says to ignore a relative one), else ~/`fallback`."""
    environ = os.environ if environ is None else environ
    value = environ.get(var, "")
    if value and os.path.isabs(value):
        return os.path.join(value, "grpo-tui")
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, fallback, "grpo-tui")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_output_path(output: str, inputs: Iterable[str]) -> None:
    """Refuse to write onto an input log (docs/contracts.md §6.6): the same inode or the same real
    path, hard and symbolic links included, since the write would replace the log.  The log's own
    folder is fine: `export run.log -o run.csv` beside the run is the natural place, and a follower
    reads only its own file."""
    if "\x00" in output:
        raise InputError(f"{output!r}: not a valid path")
    out_real = os.path.realpath(output)
    for src in inputs:
        if src != "-" and (out_real == os.path.realpath(src) or _same_file(output, src)):
            raise InputError(f"{output}: is the input log {src}; refusing to overwrite it")


@contextmanager
def atomic_open(path: str, *, encoding: str = "utf-8", newline: str | None = "") -> Iterator[TextIO]:
    """A text file handle whose content replaces `path` only if the block finishes.

    It writes a temporary file in the target's folder (so os.replace is atomic), fsyncs it,
    keeps an existing target's permissions, and removes the temporary file on any failure,
    exception or Ctrl-C included: a reader never sees half an export.  A symlink is written
    through to its target.  An existing non-regular target (/dev/null, /dev/stdout, a FIFO)
    can't be replaced, so it is written in place.  Errors are InputError `PATH: cannot write: ...`.
    """
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: cannot write: is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(real, "w", encoding=encoding, newline=newline) as fh:
                yield fh
        except OSError as exc:
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return
    folder, base = os.path.split(real)
    tmp = os.path.join(
        folder, f".{base}.{os.urandom(4).hex()}.tmp"
    )  # (secrets.token_hex's bytes: no import of hashlib)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


def write_text_atomic(path: str, text: str, **kw) -> None:
    """`text` into `path` through atomic_open."""
    with atomic_open(path, **kw) as fh:
        fh.write(text)
