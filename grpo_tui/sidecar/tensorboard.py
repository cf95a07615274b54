"""TensorBoard event files, read with no dependency: the scalar points of a run's `events.out.tfevents.*`.

A file is a sequence of records, `u64 length (LE) | u32 masked CRC-32C of the 8 length bytes | data |
u32 masked CRC-32C of data`, each data an `Event` protobuf (tensorboard's compat/proto/event.proto,
summary.proto, tensor.proto). A scalar is a `simple_value` (float32; torch's and tensorboardX's
`add_scalar`) or a one-element tensor of the "scalars" plugin (TF2). Anything else is counted, not read.

Writers buffer and flush every 120 s or in ~8 KiB pieces, so a file may end inside a record: a tail stops
before it and resumes there. Each process writes its own file into the run's folder and all of them grow
at once, so every file is tailed on its own offset (TensorBoard's DirectoryWatcher follows only the newest).

Speed: record bounds are found in a Python loop, the length CRCs of all records are checked at once with
numpy, and the usual Event shape (wall_time, step, one simple_value) is decoded column-wise; any other
shape goes through a small protobuf wire decoder. The data CRC is checked only when the `crc32c` or
`google_crc32c` package is importable (in pure Python it would cost more than the rest of the read).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from .wire import WireError as _Undecodable, fields as _fields, varint as _varint

EVENTS_PREFIX = "events.out.tfevents."
MAX_RECORD = 64 << 20  # a longer record is skipped unread (its length CRC checked): no scalar is that big
READ_CHUNK = 16 << 20  # bytes read per step: bounds memory on a large file
MAX_FOLDER_DEPTH = 3

_HEAD = 12  # u64 length + u32 length crc
_CORRUPT = -1  # _take's "need" when a length CRC fails: stop there
_FRAME = 16  # head + u32 data crc
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")

PROBLEMS = ("length crc", "data crc", "undecodable", "not scalar", "too long")

# ----------------------------------------------------------------------------- CRC-32C


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli, reflected
        table.append(c)
    return table


_TABLE = _crc_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of `data`, continuing from `crc`; table-driven, one byte a step."""
    c = crc ^ 0xFFFFFFFF
    t = _TABLE
    for b in bytes(data):
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def mask_crc(crc: int) -> int:
    """TFRecord's masked form of a CRC: rotated right by 15 bits plus a constant."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    return mask_crc(crc32c(data))


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """CRC-32C of each row of a 2-D uint8 array (uint32), one table step per column."""
    c = np.full(rows.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for j in range(rows.shape[1]):
        c = _TABLE_NP[(c ^ rows[:, j]) & 0xFF] ^ (c >> 8)
    return c ^ np.uint32(0xFFFFFFFF)


def _mask_rows(crc: np.ndarray) -> np.ndarray:
    return ((crc >> 15) | (crc << 17)) + np.uint32(0xA282EAD8)  # uint32 arithmetic wraps


def _load_data_crc() -> Callable[[bytes | memoryview], int] | None:
    """A C CRC-32C for the data CRCs when one is installed (optional: never a dependency)."""
    try:
        import crc32c as fast

        return fast.crc32c
    except Exception:  # absent or broken: the data CRC just goes unchecked
        pass
    try:
        import google_crc32c

        return google_crc32c.value
    except Exception:
        return None


_data_crc = _load_data_crc()

# ----------------------------------------------------------------------------- results


@dataclass(slots=True)
class Scalars:
    """Scalar points read in one call, as columns in file order."""

    tags: list[str]  # the tag table: tag_ids index into it (a tail keeps it growing; ids stay stable)
    tag_ids: np.ndarray  # int32, one per point
    steps: np.ndarray  # int64
    wall: np.ndarray  # float64 (Event.wall_time, seconds since the epoch)
    values: np.ndarray  # float64 (float32 simple_value widened)

    def __len__(self) -> int:
        return len(self.values)


def _empty(tags: list[str]) -> Scalars:
    return Scalars(
        tags,
        np.zeros(0, np.int32),
        np.zeros(0, np.int64),
        np.zeros(0, np.float64),
        np.zeros(0, np.float64),
    )


# ----------------------------------------------------------------------------- protobuf wire format


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


# TensorProto dtype -> (struct code of one element, the *_val field that holds it)
_TENSOR_TYPES: dict[int, tuple[str, int]] = {
    1: ("<f", 5),  # DT_FLOAT, float_val
    2: ("<d", 6),  # DT_DOUBLE, double_val
    3: ("<i", 7),  # DT_INT32, int_val
    4: ("<B", 7),  # DT_UINT8
    5: ("<h", 7),  # DT_INT16
    6: ("<b", 7),  # DT_INT8
    9: ("<q", 10),  # DT_INT64, int64_val
    10: ("<?", 11),  # DT_BOOL, bool_val
    14: ("<H", 13),  # DT_BFLOAT16 (the high half of a float32), half_val
    17: ("<H", 7),  # DT_UINT16
    19: ("<e", 13),  # DT_HALF, half_val (the 16 bits in an int32)
    22: ("<I", 16),  # DT_UINT32, uint32_val
    23: ("<Q", 17),  # DT_UINT64, uint64_val
}


def _element(code: str, dtype: int, raw: bytes) -> float:
    if dtype == 14:
        return float(_F32.unpack(struct.pack("<I", struct.unpack(code, raw)[0] << 16))[0])
    return float(struct.unpack(code, raw)[0])


def _tensor_scalar(b: bytes, pos: int, end: int) -> float | None:
    """The value of a one-element numeric TensorProto, else None."""
    dtype = 0
    elements = 1
    content: tuple[int, int] | None = None
    vals: list[tuple[int, int, int, int]] = []
    for num, wt, a, z in _fields(b, pos, end):
        if num == 1 and wt == 0:
            dtype = a
        elif num == 2 and wt == 2:  # tensor_shape: repeated Dim dim = 2 {int64 size = 1}, unknown_rank = 3
            for n2, w2, a2, z2 in _fields(b, a, z):
                if n2 == 2 and w2 == 2:
                    size = 0
                    for n3, w3, a3, _ in _fields(b, a2, z2):
                        if n3 == 1 and w3 == 0:
                            size = _signed64(a3)
                    elements *= size
                elif n2 == 3 and w2 == 0 and a2:
                    return None
        elif num == 4 and wt == 2:
            content = (a, z)
        else:
            vals.append((num, wt, a, z))
    kind = _TENSOR_TYPES.get(dtype)
    if kind is None or elements != 1:
        return None
    code, val_field = kind
    width = struct.calcsize(code)
    if content is not None and content[1] - content[0] == width:
        return _element(code, dtype, b[content[0] : content[1]])
    for num, wt, a, z in vals:
        if num != val_field:
            continue
        if val_field in (5, 6):  # fixed-width: packed (wt 2) or one element (wt 5 / 1)
            fixed = 5 if val_field == 5 else 1
            if wt == 2 and z - a >= width:
                return _element(code, dtype, b[a : a + width])
            if wt == fixed:
                return _element(code, dtype, b[a : a + width])
            continue
        if wt == 2:  # packed varints: the first one
            if z > a:
                v, _ = _varint(b, a, z)
            else:
                continue
        elif wt == 0:
            v = a
        else:
            continue
        if val_field == 13:
            return _element(code, dtype, struct.pack("<H", v & 0xFFFF))
        if val_field in (16, 17):
            return float(v & (0xFFFFFFFF if val_field == 16 else 0xFFFFFFFFFFFFFFFF))
        if val_field == 11:
            return 1.0 if v else 0.0
        v = _signed64(v)
        if code in ("<i", "<h", "<b"):  # int32 kinds: the low 32 bits, signed
            v &= 0xFFFFFFFF
            v = v - (1 << 32) if v >= 1 << 31 else v
        return float(v)
    return None


def _metadata_is_scalar(b: bytes, pos: int, end: int) -> bool:
    """SummaryMetadata naming the scalars plugin (plugin_data=1 {plugin_name=1}) or DATA_CLASS_SCALAR (4)."""
    for num, wt, a, z in _fields(b, pos, end):
        if num == 1 and wt == 2:
            for n2, w2, a2, z2 in _fields(b, a, z):
                if n2 == 1 and w2 == 2 and b[a2:z2] == b"scalars":
                    return True
        elif num == 4 and wt == 0 and a == 1:
            return True
    return False


# ----------------------------------------------------------------------------- one file


class _TagIds(dict[bytes, int]):
    """A tag's bytes as written -> its id in `tags`; a tag not seen before is added on lookup, so the
    lookup of every point is one plain dict subscript."""

    __slots__ = ("by_name", "tags")

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.by_name: dict[str, int] = {}  # two byte strings may decode to one name (bad UTF-8)

    def __missing__(self, key: bytes) -> int:
        name = key.decode("utf-8", "replace")
        tid = self.by_name.get(name)
        if tid is None:
            tid = self.by_name[name] = len(self.tags)
            self.tags.append(name)
        self[key] = tid
        return tid


class EventsFileTail:
    """One events file, read incrementally from its own offset."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.problems: dict[str, int] = dict.fromkeys(PROBLEMS, 0)
        self.restarted = 0  # times the file shrank or was replaced and was read again from 0
        self._tag_ids = _TagIds()
        self.tags: list[str] = self._tag_ids.tags
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file being read
        self._stuck: tuple[int, int] | None = None  # (size, mtime_ns) when a bad length CRC stopped us
        self._bad_at = -1  # offset of the last bad length CRC counted

    # -- reading

    def read(self, max_bytes: int | None = None) -> Scalars:
        """The scalar points of the complete records added since the last call (a partial record
        at EOF stays for the next call). A file that shrank or was replaced (inode changed) is read
        again from 0 (and `restarted` counts it).

        `max_bytes` bounds the bytes read in this call (a single record longer than it is still read
        whole). After a bad length CRC the tail stays at that record; it tries again there only
        once the file has changed (size or mtime), and never skips past it."""
        try:
            f = open(self.path, "rb")  # noqa: SIM115 -- closed below; open() may fail alone
        except OSError:
            return _empty(self.tags)
        parts: list[tuple[np.ndarray, ...]] = []
        with f:
            try:
                st = os.fstat(f.fileno())
                identity = (st.st_dev, st.st_ino)
                if self._identity is not None and (identity != self._identity or st.st_size < self.offset):
                    self.offset = 0
                    self._stuck = None
                    self._bad_at = -1
                    self.restarted += 1
                self._identity = identity
                if self._stuck is not None:
                    if self._stuck == (st.st_size, st.st_mtime_ns) or self._still_bad(f):
                        self._stuck = (st.st_size, st.st_mtime_ns)
                        return _empty(self.tags)
                    self._stuck = None
                self._read_from(f, max_bytes, parts)
            except OSError:
                pass  # what was read so far stands; the next call retries from self.offset
        if not parts:
            return _empty(self.tags)
        if len(parts) == 1:
            ids, steps, wall, values = parts[0]
        else:
            ids, steps, wall, values = (np.concatenate(c) for c in zip(*parts, strict=True))
        return Scalars(self.tags, ids, steps, wall, values)

    def _still_bad(self, f: BinaryIO) -> bool:
        """The head we stopped at still fails its CRC (checked alone: a growing file is not read again)."""
        f.seek(self.offset)
        head = f.read(_HEAD)
        return len(head) == _HEAD and masked_crc32c(head[:8]) != _U32.unpack_from(head, 8)[0]

    def _read_from(self, f: BinaryIO, max_bytes: int | None, parts: list) -> None:
        budget = 1 << 62 if max_bytes is None else max(1, max_bytes)
        need = 0
        while budget > 0:
            if need > MAX_RECORD + _FRAME:
                # a CRC-checked length too big for any scalar: pass over it once it is all written
                if os.fstat(f.fileno()).st_size - self.offset < need:
                    return
                self.problems["too long"] += 1
                self.offset += need
                budget -= need
                need = 0
                continue
            want = max(min(READ_CHUNK, budget), need)
            f.seek(self.offset)
            data = f.read(want)
            if not data:
                return
            used, need = self._take(data, parts)
            self.offset += used
            budget -= used
            if need == _CORRUPT:
                st = os.fstat(f.fileno())
                self._stuck = (st.st_size, st.st_mtime_ns)
                return
            if len(data) < want and need > len(data) - used:
                return  # EOF inside a record: a partial record, left for the next call
            if used and need > budget:
                return

    def _take(self, data: bytes, parts: list) -> tuple[int, int]:
        """Decode the complete records at the start of `data` into `parts`; (bytes used, bytes the next
        record needs from there, or _CORRUPT: a bad length CRC there)."""
        n = len(data)
        unpack = _U64.unpack_from
        starts: list[int] = []
        append = starts.append
        pos = 0
        last = n - _FRAME  # the last offset a record (of length 0) can start at
        while pos <= last:
            length = unpack(data, pos)[0]
            if length > last - pos:
                break
            append(pos)
            pos += length + _FRAME
        need = _FRAME
        if starts:
            s = np.array(starts, dtype=np.int64)
            lens = np.diff(s, append=pos) - _FRAME
            u8 = np.frombuffer(data, dtype=np.uint8)
            heads = u8[s[:, None] + np.arange(8)]
            crcs = u8[s[:, None] + np.arange(8, 12)].view("<u4").ravel()
            bad = np.flatnonzero(_mask_rows(crc32c_rows(heads)) != crcs)
            if len(bad):
                k = int(bad[0])
                self._corrupt(starts[k])
                self._decode(data, s[:k], lens[:k], parts)
                return starts[k], _CORRUPT
            self._decode(data, s, lens, parts)
        if n - pos >= _HEAD:
            head = data[pos : pos + 8]
            if masked_crc32c(head) != _U32.unpack_from(data, pos + 8)[0]:
                self._corrupt(pos)
                return pos, _CORRUPT
            need = _U64.unpack(head)[0] + _FRAME
        return pos, need

    def _corrupt(self, at: int) -> None:
        where = self.offset + at
        if where != self._bad_at:
            self.problems["length crc"] += 1
            self._bad_at = where

    def _decode(self, data: bytes, s: np.ndarray, lens: np.ndarray, parts: list) -> None:
        if not len(s):
            return
        d0 = s + _HEAD
        d1 = d0 + lens
        if _data_crc is not None:
            keep = self._check_data(data, d0, d1)
            if keep is not None:
                d0, d1 = d0[keep], d1[keep]
        ok, tag_start, tag_end = _fast_layout(data, d0, d1)
        fi = np.flatnonzero(ok)
        u8 = np.frombuffer(data, dtype=np.uint8)
        fs = d0[fi]
        wall = u8[(fs + 1)[:, None] + np.arange(8)].view("<f8").ravel()
        fe = d1[fi]
        values = u8[(fe - 4)[:, None] + np.arange(4)].view("<f4").ravel().astype(np.float64)
        steps = _fast_steps(u8, fs)
        ids = self._intern_fast(data, tag_start[fi].tolist(), tag_end[fi].tolist())
        if len(fi) == len(ok):
            parts.append((ids, steps, wall, values))
            return
        si = np.flatnonzero(~ok)
        rec: list[int] = []
        cols: tuple[list[int], list[int], list[float], list[float]] = ([], [], [], [])
        for i, a, z in zip(si.tolist(), d0[si].tolist(), d1[si].tolist(), strict=True):
            before = len(cols[0])
            self._decode_event(data, a, z, cols)
            rec.extend([i] * (len(cols[0]) - before))
        if not rec:
            parts.append((ids, steps, wall, values))
            return
        order = np.argsort(np.concatenate([fi, np.array(rec, dtype=np.int64)]), kind="stable")
        parts.append(
            (
                np.concatenate([ids, np.array(cols[0], dtype=np.int32)])[order],
                np.concatenate([steps, np.array(cols[1], dtype=np.int64)])[order],
                np.concatenate([wall, np.array(cols[2], dtype=np.float64)])[order],
                np.concatenate([values, np.array(cols[3], dtype=np.float64)])[order],
            )
        )

    def _check_data(self, data: bytes, d0: np.ndarray, d1: np.ndarray) -> np.ndarray | None:
        """Indices of the records whose data CRC holds (None: all of them); the others are counted."""
        assert _data_crc is not None
        crc = _data_crc
        got = np.array([crc(data[a:z]) for a, z in zip(d0.tolist(), d1.tolist(), strict=True)], dtype=np.uint32)
        u8 = np.frombuffer(data, dtype=np.uint8)
        want = u8[d1[:, None] + np.arange(4)].view("<u4").ravel()
        good = _mask_rows(got) == want
        if good.all():
            return None
        self.problems["data crc"] += int(len(good) - good.sum())
        return np.flatnonzero(good)

    def _intern_fast(self, data: bytes, a: list[int], z: list[int]) -> np.ndarray:
        ids = self._tag_ids
        return np.array([ids[data[x:y]] for x, y in zip(a, z, strict=True)], dtype=np.int32)

    def _decode_event(self, b: bytes, pos: int, end: int, cols: tuple[list, list, list, list]) -> None:
        """Any Event shape: its scalar values appended to cols (tag id, step, wall, value)."""
        found: list[tuple[int, float]] = []
        try:
            wall = 0.0
            step = 0
            summary: tuple[int, int] | None = None
            other = False
            for num, wt, a, z in _fields(b, pos, end):
                if num == 1 and wt == 1:
                    wall = _F64.unpack_from(b, a)[0]
                elif num == 2 and wt == 0:
                    step = _signed64(a)
                elif num == 5 and wt == 2:
                    summary = (a, z)
                elif num in (4, 6, 7, 8, 9):  # graph, log message, session log, run metadata, meta graph
                    other = True
            if summary is None:
                if other:
                    self.problems["not scalar"] += 1
                return
            for num, wt, a, z in _fields(b, summary[0], summary[1]):
                if num == 1 and wt == 2:
                    got = self._value(b, a, z)
                    if got is None:
                        self.problems["not scalar"] += 1
                    else:
                        found.append(got)
        except _Undecodable:
            self.problems["undecodable"] += 1
            return
        for tid, value in found:
            cols[0].append(tid)
            cols[1].append(step)
            cols[2].append(wall)
            cols[3].append(value)

    def _value(self, b: bytes, pos: int, end: int) -> tuple[int, float] | None:
        """A Summary.Value: (tag id, value) when it is a scalar, else None."""
        tag = b""
        simple: float | None = None
        tensor: tuple[int, int] | None = None
        scalar_meta = False
        for num, wt, a, z in _fields(b, pos, end):
            if num == 1 and wt == 2:
                tag = b[a:z]
            elif num == 2 and wt == 5:
                simple = _F32.unpack_from(b, a)[0]
            elif num == 8 and wt == 2:
                tensor = (a, z)
            elif num == 9 and wt == 2:
                scalar_meta = _metadata_is_scalar(b, a, z)
        if simple is None and tensor is not None and scalar_meta:
            simple = _tensor_scalar(b, tensor[0], tensor[1])
        if simple is None:
            return None
        return self._tag_ids[tag], simple


def _fast_layout(data: bytes, d0: np.ndarray, d1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which records are the Event torch/tensorboardX write for add_scalar, exactly:
    wall_time (09 +8), step (10 varint, absent when 0), summary (2a len) holding one value (0a len)
    of a tag (0a len str) and a simple_value (15 +4), the one-byte lengths. (mask, tag start, tag end).
    Every byte tested lies inside its record when the mask holds (the last test pins the end)."""
    u8 = np.frombuffer(data, dtype=np.uint8)
    top = len(data) - 1

    def at(i: np.ndarray) -> np.ndarray:
        return u8[np.minimum(i, top)]

    ok = at(d0) == 0x09
    p = d0 + 9
    has_step = at(p) == 0x10
    p = p + has_step  # at the step varint, or at the summary when there is no step
    live = np.flatnonzero(has_step)
    for _ in range(10):
        if not len(live):
            break
        b = at(p[live])
        p[live] += 1
        live = live[b >= 0x80]
    ok[live] = False  # a varint longer than 10 bytes
    ok &= at(p) == 0x2A
    s1 = at(p + 1).astype(np.int64)
    ok &= (s1 < 0x80) & (p + 2 + s1 == d1) & (at(p + 2) == 0x0A)
    v1 = at(p + 3).astype(np.int64)
    ok &= (v1 < 0x80) & (p + 4 + v1 == d1) & (at(p + 4) == 0x0A)
    tl = at(p + 5).astype(np.int64)
    tag_end = p + 6 + tl
    ok &= (tl < 0x80) & (at(tag_end) == 0x15) & (tag_end + 5 == d1)
    return ok, p + 6, tag_end


def _fast_steps(u8: np.ndarray, d0: np.ndarray) -> np.ndarray:
    """The step of each fast-layout record at d0 (0 where the Event has none)."""
    steps = np.zeros(len(d0), dtype=np.uint64)
    live = np.flatnonzero(u8[d0 + 9] == 0x10)
    p = d0 + 10
    shift = 0
    while len(live) and shift < 70:
        b = u8[p[live]]
        steps[live] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        p[live] += 1
        live = live[b >= 0x80]
        shift += 7
    return steps.view(np.int64)


# ----------------------------------------------------------------------------- folders


def events_files(folder: str) -> list[str]:
    """The events.out.tfevents.* files directly in `folder`, sorted by name."""
    found = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                try:
                    if e.name.startswith(EVENTS_PREFIX) and e.is_file():
                        found.append(e.path)
                except OSError:
                    continue
    except OSError:
        return []
    return sorted(found)


def find_event_folders(path: str) -> list[str]:
    """`path` itself if it holds events files, else its subfolders (recursively, depth <= 3) that do,
    not looking inside a folder that holds some; sorted. (Miles without TENSORBOARD_DIR spreads one run
    over sibling timestamp folders; TRL writes runs/<name>/.)"""
    if events_files(path):
        return [path]
    found: list[str] = []

    def walk(folder: str, depth: int) -> None:
        try:
            with os.scandir(folder) as it:
                subs = [e.path for e in it if _is_dir(e)]
        except OSError:
            return
        for sub in subs:
            if events_files(sub):
                found.append(sub)
            elif depth < MAX_FOLDER_DEPTH:
                walk(sub, depth + 1)

    walk(path, 1)
    return sorted(found)


def _is_dir(e: os.DirEntry) -> bool:
    try:
        return e.is_dir(follow_symlinks=False)
    except OSError:
        return False


class EventsFolderTail:
    """Every events file of a run folder, each tailed on its own; files that appear later are picked up."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.files: list[str] = []
        self._tails: dict[str, EventsFileTail] = {}

    def read(self) -> list[tuple[str, Scalars]]:
        """(file path, its new points) for each file with new points, files in name order. The folder
        is listed again on each call: new files are tailed from 0, files gone are dropped."""
        self.files = events_files(self.folder)
        tails = {p: self._tails.get(p) or EventsFileTail(p) for p in self.files}
        self._tails = tails
        out = []
        for p in self.files:
            got = tails[p].read()
            if len(got):
                out.append((p, got))
        return out

    def tail(self, path: str) -> EventsFileTail | None:
        """The tail of one file of the folder (its tag table, offset and problems)."""
        return self._tails.get(path)

    @property
    def problems(self) -> dict[str, int]:
        total = dict.fromkeys(PROBLEMS, 0)
        for t in self._tails.values():
            for k, v in t.problems.items():
                total[k] = total.get(k, 0) + v
        return total

    @property
    def restarted(self) -> int:
        return sum(t.restarted for t in self._tails.values())


# ----------------------------------------------------------------------------- writing (simulate, tests)


def _put_varint(v: int) -> bytes:
    v &= 0xFFFFFFFFFFFFFFFF  # negative int64: ten bytes of two's complement, as protobuf writes it
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _put_len(field: int, body: bytes) -> bytes:
    return _put_varint(field << 3 | 2) + _put_varint(len(body)) + body


def frame(data: bytes) -> bytes:
    """One TFRecord: the framing TensorBoard's RecordWriter puts around an Event."""
    head = _U64.pack(len(data))
    return head + _U32.pack(masked_crc32c(head)) + data + _U32.pack(masked_crc32c(data))


def version_event(wall: float) -> bytes:
    """The first Event of every file: file_version "brain.Event:2"."""
    return b"\x09" + _F64.pack(wall) + _put_len(3, b"brain.Event:2")


def scalar_event(tag: str, value: float, step: int, wall: float) -> bytes:
    """The Event of `add_scalar` (torch, tensorboardX): wall_time, step, one simple_value."""
    with np.errstate(over="ignore"):
        f32 = np.array(value, dtype="<f4").tobytes()  # out of float32 range: inf, as torch writes it
    val = _put_len(1, tag.encode()) + b"\x15" + f32
    head = (b"\x09" + _F64.pack(wall) if wall else b"") + (b"\x10" + _put_varint(step) if step else b"")
    return head + _put_len(5, _put_len(1, val))
