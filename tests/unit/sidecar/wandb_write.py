"""A tiny .wandb writer for tests and benchmarks/wandb_read.py (wandb itself is no dependency).

It lays chunks out as wandb's Go writer does (core/pkg/leveldb/record.go: header, 32 KiB blocks,
zero padding, FULL/FIRST/MIDDLE/LAST); test_wandb_offline.py checks that it gives back, byte for
byte, the files real wandb 0.31 made (tests/fixtures/sidecars/wandb/).
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Iterable
from typing import Any

HEADER = b":W&B\xe1\xbe\x00"
BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def chunk(kind: int, payload: bytes, crc: int | None = None, length: int | None = None) -> bytes:
    """One chunk; `crc` and `length` to write wrong ones."""
    if crc is None:
        crc = zlib.crc32(bytes([kind]) + payload)
    return struct.pack("<IHB", crc, len(payload) if length is None else length, kind) + payload


def write_log(payloads: Iterable[bytes], header: bytes = HEADER) -> bytes:
    """A .wandb file holding these records."""
    out = bytearray(header)
    for payload in payloads:
        left = BLOCK - len(out) % BLOCK
        if left < 7:
            out += bytes(left)
        rest = memoryview(payload)
        first = True
        while True:
            room = BLOCK - len(out) % BLOCK - 7
            take, rest = rest[:room], rest[room:]
            last = not rest
            kind = (FULL if last else FIRST) if first else (LAST if last else MIDDLE)
            out += chunk(kind, bytes(take))
            if last:
                break
            first = False
    return bytes(out)


def read_chunks(data: bytes) -> list[tuple[int, int, bytes]]:
    """(offset, type, payload) of each chunk, by the layout alone (no crc check): to cut and damage
    files at known places."""
    out = []
    pos = len(HEADER)
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack_from("<IHB", data, pos)
        out.append((pos, kind, data[pos + 7 : pos + 7 + length]))
        pos += 7 + length
    return out


def payloads(data: bytes) -> list[bytes]:
    """The records of a well-formed file."""
    out: list[bytes] = []
    parts: list[bytes] = []
    for _, kind, payload in read_chunks(data):
        parts.append(payload)
        if kind in (FULL, LAST):
            out.append(b"".join(parts))
            parts = []
    return out


# ----------------------------------------------------------------------------- protobuf
def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field(number: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def value_json(value: Any) -> str:
    """As wandb writes a value: non-finite floats as bare NaN/Infinity, whole floats as ints."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return json.dumps(value)


def items(row: dict[str, Any], number: int = 1) -> bytes:
    """HistoryItem / ConfigItem / SummaryItem fields: the key in nested_key, as wandb 0.31 writes it."""
    return b"".join(
        field(number, field(2, key.encode()) + field(16, value_json(value).encode())) for key, value in row.items()
    )


def record(number: int, body: bytes, num: int = 1) -> bytes:
    """A Record: num=1, then the record itself as field `number`."""
    return field(1, num) + field(number, body)


def history(row: dict[str, Any], step: int = 0, num: int = 1) -> bytes:
    return record(2, items(row) + field(2, field(1, step) if step else b""), num)


def summary(row: dict[str, Any], num: int = 1) -> bytes:
    return record(3, items(row), num)


def config(row: dict[str, Any], num: int = 1) -> bytes:
    return record(5, items(row), num)


def run(
    run_id: str, config_row: dict[str, Any], display_name: str | None = None, seconds: int = 0, nanos: int = 0
) -> bytes:
    body = field(1, run_id.encode()) + field(4, items(config_row))
    if display_name is not None:
        body += field(8, display_name.encode())
    if seconds or nanos:
        body += field(17, field(1, seconds) + field(2, nanos))
    return record(17, body)


def exit_record(code: int) -> bytes:
    return record(18, field(1, code) if code else b"")
