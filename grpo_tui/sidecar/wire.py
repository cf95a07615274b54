"""The protobuf wire format, as far as the two readers need it (tensorboard.py's Event, wandb_offline.py's
Record): varints and the fields of a message, read by hand so that no protobuf package is needed."""

from __future__ import annotations

from collections.abc import Iterator


class WireError(Exception):
    """A message that does not decode."""


def varint(b: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value as uint64, the offset after it) of the varint at b[pos]."""
    result = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise WireError
        x = b[pos]
        pos += 1
        result |= (x & 0x7F) << shift
        if x < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def fields(b: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, a, b) of each field in b[pos:end]: a varint's value in a; the
    span a:b of a fixed64, fixed32 or length-delimited field."""
    while pos < end:
        key, pos = varint(b, pos, end)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise WireError
        if wt == 0:
            v, pos = varint(b, pos, end)
            yield num, 0, v, 0
        elif wt == 1 or wt == 5:
            size = 8 if wt == 1 else 4
            if end - pos < size:
                raise WireError
            yield num, wt, pos, pos + size
            pos += size
        elif wt == 2:
            n, pos = varint(b, pos, end)
            if n > end - pos:
                raise WireError
            yield num, 2, pos, pos + n
            pos += n
        else:  # groups (3, 4) are in neither message; 6 and 7 do not exist
            raise WireError
