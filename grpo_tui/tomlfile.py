"""A small TOML file read as strictly as a user's input should be: the ranges file and the
config file share it, so both say `FILE:LINE: reason` for the same faults (not UTF-8, over
1 MiB, a FIFO or a device, invalid TOML, nested too deep) and never show a traceback."""

from __future__ import annotations

import re

from .lines.files import InputError, open_regular
from .output import safe_text

MAX_BYTES = 1 << 20  # a ranges or config file is a few kB; anything near this is something else


def where(path: str, line: int | None) -> str:
    return f"{path}:{line}" if line else path


def kind_of(v) -> str:
    return {bool: "a boolean", str: "a string", list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def too_deep(doc: dict, max_depth: int) -> bool:
    """More nested tables/lists than max_depth, checked without recursion."""
    todo: list[tuple[dict | list, int]] = [(doc, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > max_depth:
            return True
        kids = node.values() if isinstance(node, dict) else node
        todo.extend((k, depth + 1) for k in kids if isinstance(k, (dict, list)))
    return False


def read_toml(path: str, what: str, error: type[Exception], max_depth: int) -> tuple[dict, list[str]]:
    """(the document, its lines) of the TOML file at `path`; `error("FILE[:LINE]: reason")` on
    any problem.  `what` names the file in messages ("ranges file", "config file")."""
    try:
        fh = open_regular(path if path != "-" else "./-")  # `-` is a file name here, never stdin
    except InputError as exc:
        raise error(f"{safe_text(exc)} ({what})") from None
    with fh:
        try:
            raw = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            raise error(f"{safe_text(path)}: cannot read {what}: {exc.strerror or exc}") from None
    name = safe_text(path)
    if len(raw) > MAX_BYTES:
        raise error(f"{name}: too large for a {what} (over {MAX_BYTES >> 20} MiB)")
    if b"\x00" in raw:
        raise error(f"{name}: not a text file (binary data)")
    import tomllib  # (a TOML file is read seldom: not every command's start)

    try:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError:
        raise error(f"{name}: not a text (UTF-8) file") from None
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        raise error(f"{where(name, int(m.group(1)) if m else None)}: invalid TOML: {safe_text(exc)}") from None
    except RecursionError:
        raise error(f"{name}: nested deeper than a {what} allows") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise error(f"{name}: invalid TOML: {safe_text(exc)}") from None
    if too_deep(doc, max_depth):
        raise error(f"{name}: nested deeper than a {what} allows (at most {max_depth} levels)")
    return doc, text.splitlines()


Table = str | tuple[str, ...]  # "a.b", or its parts when one holds a dot


def header_line(lines: list[str], table: Table) -> int | None:
    """1-based line of `[a.b]` or `[[a.b]]` (bare or quoted parts), or None."""
    names = table.split(".") if isinstance(table, str) else table
    parts = r"\s*\.\s*".join(r"([\"']?)" + re.escape(p) + rf"\{i + 1}" for i, p in enumerate(names))
    pat = re.compile(r"\s*\[\[?\s*" + parts + r"\s*\]")
    for i, line in enumerate(lines, 1):
        if pat.match(line):
            return i
    return None


def key_line(lines: list[str], table: Table | None, key: str | None) -> int | None:
    """Line of `key = ...` inside `[table]` (None: the top, before any table); the table's
    header when the key is not found there, or None."""
    head = 0 if table is None else header_line(lines, table)
    if head is None or key is None:
        return head or None
    pat = re.compile(r"\s*([\"']?)" + re.escape(key) + r"\1\s*=")
    for i in range(head, len(lines)):
        if lines[i].lstrip().startswith("["):
            break
        if pat.match(lines[i]):
            return i + 1
    return head or None
