"""Read W&B offline runs (`wandb/offline-run-<YYYYMMDD_HHMMSS>-<id>/run-<id>.wandb`) without wandb.

The format, as wandb writes it (core/pkg/leveldb/record.go, core/internal/transactionlog/,
wandb/proto/wandb_internal.proto):

- a 7-byte header: ``:W&B``, u16 0xBEE1 (little-endian), u8 version 0;
- then the LevelDB log format: 32 KiB blocks counted from the start of the file (so the first holds
  7 bytes less), each a run of chunks ``u32 crc | u16 length | u8 type | payload`` (little-endian;
  type 1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST), the crc being CRC-32 IEEE (zlib.crc32) of type and
  payload; a block's tail of fewer than 7 bytes is zero padding;
- each record (the payloads of one FULL chunk, or of FIRST, MIDDLE..., LAST) is a protobuf
  ``Record``; only history=2, summary=3, config=5, run=17 and exit=18 are decoded here.

A process that logs to a run writes its own folder: Miles' driver and its Ray actors each open the
run with the same id, so one run is several folders with one id (`find_wandb_runs` groups them,
`WandbRunTail` reads them together).  Before wandb 0.31 records reach the disk a 32 KiB block at a
time, so a live file may end inside a chunk or inside a record: a tail keeps only whole records and
starts again at the first byte of the one it could not finish.

Nothing here names a metric or an axis: rows come back as W&B logged them.
"""

from __future__ import annotations

import json
import json.scanner
import os
import re
import stat
import struct
import zlib
from collections.abc import Callable
from typing import Any, cast

from .wire import WireError as _Bad, fields as _fields, varint as _varint

WandbRecord = tuple[str, dict[str, Any]]

HEADER = b":W&B\xe1\xbe\x00"
BLOCK = 32 * 1024
CHUNK_HEAD = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4

WINDOW = 8 << 20  # bytes read per step, so a long file is never held whole
MAX_RECORD = 64 << 20  # a record longer than this is dropped (counted), never assembled
MAX_CACHED_KEYS = 1 << 16

PROBLEMS = (
    "bad header",  # not a W&B header (read on: every chunk has its own crc), or an unknown version (not read)
    "chunk crc",  # the rest of that block is skipped
    "chunk length",  # a chunk said to cross its block's end: the rest of the block is skipped
    "chunk type",  # a type other than 1-4 (its bytes are skipped)
    "chunk sequence",  # MIDDLE or LAST with no FIRST before it, or a FIRST never finished
    "zeroed block",  # a chunk header of zeros (a file extended by a crash): the rest of the block is skipped
    "record too long",
    "undecodable",  # a record that is not the protobuf it says it is
    "bad json",  # one value_json that JSON does not read (that item is left out)
)

_chunk_head = struct.Struct("<IHB").unpack_from
_RUN_FILE = re.compile(r"run-(.+)\.wandb\Z")
_RUN_DIR = re.compile(r"(?:offline-)?run-\d{8}_\d{6}-(.+)\Z")

# a key's field bytes -> its text, shared by every reader: a run logs the same few hundred keys all along
_key_texts: dict[bytes, str] = {}
# json's own scanner, called without json.loads' layers: (value, end) of the JSON text at an index
_scan_json: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(cast(Any, json.JSONDecoder()))


def _key_text(raw: bytes, text: bytes) -> str:
    """`text` decoded, remembered under `raw` (the key's field as written: tag, length, text)."""
    if len(_key_texts) >= MAX_CACHED_KEYS:
        _key_texts.clear()
    name = _key_texts[raw] = text.decode("utf-8", "replace")
    return name


def _slow_item(b: bytes, i: int, end: int) -> tuple[str, bytes | None]:
    """One HistoryItem / ConfigItem / SummaryItem {key=1, nested_key=2 repeated, value_json=16}."""
    parts: list[str] = []
    value = None
    for number, wire, start, stop in _fields(b, i, end):
        if wire != 2:
            continue
        if number == 1 or number == 2:
            if stop == start and number == 1:
                continue  # an empty key: the parts are all in nested_key
            parts.append(b[start:stop].decode("utf-8", "replace"))
        elif number == 16:
            value = b[start:stop]
    return "/".join(parts), value


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


class WandbFileTail:
    """One .wandb file, read incrementally from its own offset."""

    def __init__(self, path: str, *, summaries: bool = False) -> None:
        self.path = path
        # wandb writes a summary record beside every history row, with the same values: skipped
        # unless asked for (decoding them doubles the time a read takes)
        self.summaries = summaries
        self.offset = 0  # where the next read starts: the first byte of a record not yet whole
        self.problems: dict[str, int] = dict.fromkeys(PROBLEMS, 0)
        self._skip = False  # at `offset`: MIDDLE and LAST chunks of a record already given up on
        self._dead = False  # a header of an unknown version: nothing more is read from this file
        self._ident: tuple[int, int] | None = None
        self._size = 0

    def read(self) -> list[WandbRecord]:
        """The records completed since the last call, in file order. A file that shrank or was replaced
        is read again from 0."""
        out: list[WandbRecord] = []
        try:
            # stat before open: opening a FIFO would wait for a writer
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                return out
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                ident = (st.st_dev, st.st_ino)
                if ident != self._ident or st.st_size < self._size:
                    self.offset, self._skip, self._dead = 0, False, False
                    self._ident = ident
                self._size = st.st_size
                if self._dead or st.st_size <= self.offset:
                    return out
                if self.offset == 0 and not self._header(f.read(len(HEADER))):
                    return out
                self._read_from(f, out)
        except OSError:
            pass
        return out

    def _header(self, head: bytes) -> bool:
        """Check the file's header; False if there is nothing more to read now."""
        if len(head) < len(HEADER):
            if HEADER.startswith(head):
                return False  # a file still being written
            self.problems["bad header"] += 1
            self._dead = True
            return False
        if head != HEADER:
            self.problems["bad header"] += 1
            if head[:6] == HEADER[:6]:  # a later version of the format: its records may mean other things
                self._dead = True
                return False
        self.offset = len(HEADER)
        return True

    def _read_from(self, f: Any, out: list[WandbRecord]) -> None:
        f.seek(self.offset)
        buf = b""
        while True:
            # a record longer than a window is read in growing steps, not scanned again per window
            more = f.read(max(WINDOW, len(buf)))
            if not more:
                return
            buf = buf + more if buf else more
            base = self.offset
            self.offset = self._scan(buf, base, out)
            used = self.offset - base
            if used < len(buf):
                buf = buf[used:]
            else:
                if used > len(buf):  # damage made it skip to a block not read yet
                    f.seek(self.offset)
                buf = b""

    def _scan(self, buf: bytes, base: int, out: list[WandbRecord]) -> int:
        """Decode the whole records in `buf` (the file's bytes from `base`, a record's or block's start)
        into `out`; return the file offset to read again from."""
        n = len(buf)
        view = memoryview(buf)
        problems = self.problems
        pos = start = 0  # start: the first byte of the record being put together (or of the next one)
        parts: list[Any] | None = None
        size = 0
        skip = self._skip
        while True:
            room = BLOCK - (base + pos) % BLOCK
            if room < CHUNK_HEAD:
                if pos + room > n:
                    break
                pos += room
                if parts is None:
                    start = pos
                continue
            if pos + CHUNK_HEAD > n:
                break
            crc, length, kind = _chunk_head(buf, pos)
            end = pos + CHUNK_HEAD + length
            damage = None
            if length + CHUNK_HEAD > room:
                damage = "chunk length"
            elif crc == 0 and length == 0 and kind == 0:
                damage = "zeroed block"
            elif end > n:
                break  # the chunk is not all written yet
            elif zlib.crc32(view[pos + 6 : end]) != crc:
                damage = "chunk crc"
            if damage is not None:
                # as LevelDB does: give up the rest of the block and whatever record was open
                problems[damage] += 1
                pos += room
                start = pos
                parts = None
                skip = True
                continue
            chunk_start = pos
            pos = end
            if kind == FULL:
                if parts is not None:
                    problems["chunk sequence"] += 1
                    parts = None
                skip = False
                self._decode(buf, chunk_start + CHUNK_HEAD, end, out)
                start = pos
            elif kind == FIRST:
                if parts is not None:
                    problems["chunk sequence"] += 1
                parts = [view[chunk_start + CHUNK_HEAD : end]]
                size = length
                skip = False
                start = chunk_start
            elif kind in (MIDDLE, LAST):
                if parts is None:
                    if not skip:
                        problems["chunk sequence"] += 1
                    skip = kind == MIDDLE
                    start = pos
                    continue
                size += length
                if size > MAX_RECORD:
                    problems["record too long"] += 1
                    parts = None
                    skip = kind == MIDDLE
                    start = pos
                    continue
                parts.append(view[chunk_start + CHUNK_HEAD : end])
                if kind == LAST:
                    record = b"".join(parts)
                    parts = None
                    self._decode(record, 0, len(record), out)
                    start = pos
            else:
                problems["chunk type"] += 1
                parts = None
                skip = False
                start = pos
        # a record left open began at `start` with a FIRST chunk, which clears `skip` when read again
        self._skip = skip if parts is None else False
        view.release()
        return base + start

    def _decode(self, b: bytes, i: int, end: int, out: list[WandbRecord]) -> None:
        """One Record: append what it holds to `out` if it is one of the kinds read here."""
        try:
            # the usual record, num=1 then history=2, without the general field walk
            if i < end and b[i] == 0x08:
                i = _varint(b, i + 1, end)[1]
                if i < end and b[i] == 0x12:
                    n, start = _varint(b, i + 1, end)
                    if n <= end - start:
                        out.append(("history", self._items(b, start, start + n)))
                        return
                elif i < end and b[i] == 0x1A and not self.summaries:
                    return
            for number, wire, start, stop in _fields(b, i, end):
                if wire != 2:
                    continue
                if number == 2:
                    out.append(("history", self._items(b, start, stop)))
                    return
                if number == 3:
                    if self.summaries:
                        out.append(("summary", self._items(b, start, stop)))
                    return
                if number == 5:
                    out.append(("config", self._items(b, start, stop)))
                    return
                if number == 17:
                    out.append(("run", self._run(b, start, stop)))
                    return
                if number == 18:
                    code = 0
                    for field, field_wire, value, _ in _fields(b, start, stop):
                        if field == 1 and field_wire == 0:
                            code = _int32(value)
                    out.append(("exit", {"exit_code": code}))
                    return
        except _Bad:
            self.problems["undecodable"] += 1

    def _items(self, b: bytes, i: int, end: int) -> dict[str, Any]:
        """The items (field 1) of a HistoryRecord, or the updates (field 1) of a ConfigRecord or
        SummaryRecord: {key: value}, the key's parts joined with "/"."""
        keys: list[str] = []
        values: list[bytes] = []
        texts = _key_texts
        while i < end:
            # the usual item: 0x0a n, one key part (0x12 or 0x0a, m, key), value_json (0x82 0x01 v, json),
            # every length below 128
            if b[i] == 0x0A and i + 2 < end:
                n = b[i + 1]
                j = i + 2
                stop = j + n
                if 4 < n < 0x80 and stop <= end:
                    k = j + 2 + b[j + 1]
                    if k + 3 <= stop and b[k] == 0x82 and b[k + 1] == 0x01 and k + 3 + b[k + 2] == stop:
                        name = texts.get(b[j:k])
                        if name is not None:
                            keys.append(name)
                            values.append(b[k + 3 : stop])
                            i = stop
                            continue
                        if (b[j] == 0x12 or b[j] == 0x0A) and b[j + 1] < 0x80:
                            keys.append(_key_text(b[j:k], b[j + 2 : k]))
                            values.append(b[k + 3 : stop])
                            i = stop
                            continue
            i = self._other_field(b, i, end, keys, values)
        return self._values(keys, values)

    def _other_field(self, b: bytes, i: int, end: int, keys: list[str], values: list[bytes]) -> int:
        """Read one field at `i` of an item list the usual way could not: an item in any shape, or
        another field (the step, a removal, _info), skipped; return where the next one starts."""
        key, i = _varint(b, i, end)
        wire = key & 7
        if wire == 0:
            return _varint(b, i, end)[1]
        if wire == 1 or wire == 5:
            i += 8 if wire == 1 else 4
            if i > end:
                raise _Bad
            return i
        if wire != 2:
            raise _Bad
        n, i = _varint(b, i, end)
        if n > end - i:
            raise _Bad
        if key == 0x0A:
            name, value = _slow_item(b, i, i + n)
            if value is not None:
                keys.append(name)
                values.append(value)
        return i + n

    def _values(self, keys: list[str], values: list[bytes]) -> dict[str, Any]:
        """Decode a row's value_json texts, as one JSON array when that is safe."""
        if not values:
            return {}
        text = b"[" + b",".join(values) + b"]"
        # with no comma inside a value, each of the n values is exactly one of the n array elements
        if text.count(b",") == len(values) - 1:
            try:
                whole = text.decode("utf-8")
                decoded, stop = _scan_json(whole, 0)
                if stop == len(whole) and len(decoded) == len(values):
                    return dict(zip(keys, decoded))
            except (ValueError, RecursionError, StopIteration):
                pass
        row: dict[str, Any] = {}
        for key, value in zip(keys, values):
            try:
                row[key] = json.loads(value.decode("utf-8"))
            except (ValueError, RecursionError):
                self.problems["bad json"] += 1
        return row

    def _run(self, b: bytes, i: int, end: int) -> dict[str, Any]:
        run: dict[str, Any] = {"run_id": "", "display_name": None, "config": {}, "start_time": None}
        for number, wire, start, stop in _fields(b, i, end):
            if wire != 2:
                continue
            if number == 1:
                run["run_id"] = b[start:stop].decode("utf-8", "replace")
            elif number == 8:
                run["display_name"] = b[start:stop].decode("utf-8", "replace")
            elif number == 4:
                run["config"] = self._items(b, start, stop)
            elif number == 17:
                seconds = nanos = 0
                for field, field_wire, value, _ in _fields(b, start, stop):
                    if field == 1 and field_wire == 0:
                        seconds = _int64(value)
                    elif field == 2 and field_wire == 0:
                        nanos = _int32(value)
                run["start_time"] = seconds + nanos / 1e9
        return run


class WandbRunTail:
    """Every .wandb file of one run id (one per process), each tailed on its own; folders of that id
    that appear later are picked up."""

    def __init__(self, root: str, run_id: str) -> None:
        self.root = root
        self.run_id = run_id
        self._tails: dict[str, WandbFileTail] = {}

    @property
    def files(self) -> list[str]:
        """The files read so far, in name order."""
        return sorted(self._tails)

    @property
    def problems(self) -> dict[str, int]:
        """The problems of all the run's files, summed."""
        total = dict.fromkeys(PROBLEMS, 0)
        for tail in self._tails.values():
            for name, count in tail.problems.items():
                total[name] += count
        return total

    def read(self) -> list[tuple[str, list[WandbRecord]]]:
        """(file path, its records completed since the last call) for each file with any, files in
        name order (their folders' names begin with the time the process started)."""
        for path in find_wandb_runs(self.root).get(self.run_id, []):
            if path not in self._tails:
                self._tails[path] = WandbFileTail(path)
        out = []
        for path in sorted(self._tails):
            records = self._tails[path].read()
            if records:
                out.append((path, records))
        return out


def find_wandb_runs(path: str) -> dict[str, list[str]]:
    """run id -> its .wandb files, for `path` = a .wandb file, an offline-run-*/run-* folder, a `wandb`
    dir holding such folders (latest-run link followed once, not double-counted), or a folder holding
    a `wandb` dir. {} if none."""
    runs: dict[str, list[str]] = {}
    seen: set[str] = set()

    def add(file: str) -> None:
        real = os.path.realpath(file)
        if real in seen:
            return
        seen.add(real)
        match = _RUN_FILE.match(os.path.basename(file))
        if match:
            runs.setdefault(match.group(1), []).append(file)

    def run_files(folder: str) -> list[str]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        return [
            os.path.join(folder, name)
            for name in names
            if _RUN_FILE.match(name) and _is_file(os.path.join(folder, name))
        ]

    if _is_file(path):
        add(path)
    elif os.path.isdir(path):
        files = run_files(path)
        if files:  # an offline-run-* folder itself
            for file in files:
                add(file)
        else:
            top = path
            if not _has_run_dirs(top) and os.path.isdir(os.path.join(path, "wandb")):
                top = os.path.join(path, "wandb")
            try:
                names = sorted(os.listdir(top))
            except OSError:
                names = []
            # the real folders first, so a `latest-run` link to one of them adds nothing
            names.sort(key=lambda name: os.path.islink(os.path.join(top, name)))
            for name in names:
                folder = os.path.join(top, name)
                if (_RUN_DIR.match(name) or name == "latest-run") and os.path.isdir(folder):
                    for file in run_files(folder):
                        add(file)
    for files in runs.values():
        files.sort()
    return runs


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _has_run_dirs(folder: str) -> bool:
    try:
        return any(_RUN_DIR.match(name) for name in os.listdir(folder))
    except OSError:
        return False
