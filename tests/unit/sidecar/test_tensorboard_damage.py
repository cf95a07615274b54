"""Damaged TensorBoard files: never raise, never hang, never read past the file; count what is skipped
and keep the good records before the damage."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui.sidecar import tensorboard as tb

from .conftest import points, record_ends, train_file

GOOD = train_file("crashed").read_bytes()[:6000]
GOOD_ENDS = record_ends(GOOD)
GOOD = GOOD[: GOOD_ENDS[-1]]  # whole records only
GOOD_POINTS = points(tb.EventsFileTail(str(train_file("crashed"))).read())[: len(GOOD_ENDS) - 1]


def read_bytes(data: bytes, calls: int = 3) -> tuple[tb.EventsFileTail, list]:
    """Every point a tail reads from `data` in a few calls (checking its offset stays in the file)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.out.tfevents.1.h.1.0")
        with open(path, "wb") as f:
            f.write(data)
        t = tb.EventsFileTail(path)
        got: list = []
        for _ in range(calls):
            s = t.read()
            got += points(s)
            assert 0 <= t.offset <= len(data)
            assert len(s.tag_ids) == len(s.steps) == len(s.wall) == len(s.values)
            assert all(0 <= i < len(s.tags) for i in s.tag_ids.tolist())
        return t, got


def good_before(at: int) -> list:
    """The points of the records wholly before byte `at`."""
    return GOOD_POINTS[: max(0, sum(1 for e in GOOD_ENDS if e <= at) - 1)]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_random_bytes(data: bytes) -> None:
    t, _ = read_bytes(data)
    assert t.restarted == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(GOOD) - 1), st.integers(0, 7)), min_size=1, max_size=4))
def test_flipped_bits_keep_the_records_before_them(flips: list[tuple[int, int]]) -> None:
    data = bytearray(GOOD)
    for pos, bit in flips:
        data[pos] ^= 1 << bit
    t, got = read_bytes(bytes(data))
    first = min(p for p, _ in flips)
    assert got[: len(good_before(first))] == good_before(first)
    # the file_version record is not a point, so a flip there (or in a head) may lose every point
    assert len(got) <= len(GOOD_POINTS) + 2 * len(flips)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(GOOD)))
def test_truncated_files(cut: int) -> None:
    t, got = read_bytes(GOOD[:cut])
    assert got == good_before(cut)
    assert t.problems == dict.fromkeys(tb.PROBLEMS, 0)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=200))
def test_garbage_after_valid_records(junk: bytes) -> None:
    t, got = read_bytes(GOOD + junk)
    assert got[: len(GOOD_POINTS)] == GOOD_POINTS
    assert t.offset >= len(GOOD)


def head(length: int, good_crc: bool = True) -> bytes:
    h = struct.pack("<Q", length)
    crc = tb.masked_crc32c(h)
    return h + struct.pack("<I", crc if good_crc else crc ^ 1)


@pytest.mark.parametrize("length", [2**63, 2**64 - 1, tb.MAX_RECORD + 1, 10**9])
def test_a_huge_length_with_a_good_crc_waits_and_never_allocates(length: int) -> None:
    t, got = read_bytes(GOOD + head(length) + b"x" * 100)
    assert got == GOOD_POINTS
    assert t.offset == len(GOOD)  # waiting for a record that is not all there
    assert t.problems == dict.fromkeys(tb.PROBLEMS, 0)


def test_a_bad_length_crc_stops_there_and_is_counted_once(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    path.write_bytes(GOOD + head(2**63, good_crc=False) + GOOD)
    t = tb.EventsFileTail(str(path))
    assert points(t.read()) == GOOD_POINTS
    assert t.offset == len(GOOD) and t.problems["length crc"] == 1
    assert len(t.read()) == 0
    with open(path, "ab") as f:  # the file changes: tried again at the same place, never skipped
        f.write(GOOD)
    assert len(t.read()) == 0
    assert t.offset == len(GOOD) and t.problems["length crc"] == 1


def test_a_too_long_record_is_passed_over_once_all_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(tb, "MAX_RECORD", 1000)
    monkeypatch.setattr(tb, "READ_CHUNK", 500)  # (the real chunk is below the real limit, too)
    big = tb.frame(b"\x00" * 2000)
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    path.write_bytes(GOOD + big[:1500])
    t = tb.EventsFileTail(str(path))
    assert points(t.read()) == GOOD_POINTS and t.offset == len(GOOD)
    with open(path, "ab") as f:
        f.write(big[1500:] + GOOD[GOOD_ENDS[0] :])
    assert points(t.read()) == GOOD_POINTS
    assert t.problems["too long"] == 1 and t.offset == 2 * len(GOOD) + len(big) - GOOD_ENDS[0]


def test_zero_length_and_undecodable_records_are_skipped() -> None:
    bad = [
        tb.frame(b""),  # an empty Event: nothing in it
        tb.frame(b"\x2a\xff\xff"),  # summary with a length past the end
        tb.frame(b"\x0b"),  # a group wire type
        tb.frame(b"\x2a\x03\x0a\x01\x0a"),  # a Value whose tag runs past its end
        tb.frame(b"\x10" + b"\xff" * 11),  # a varint of 11 bytes
        tb.frame(b"\x09\x00"),  # a double cut short
    ]
    t, got = read_bytes(GOOD + b"".join(bad) + GOOD[GOOD_ENDS[0] :], calls=1)
    assert got == GOOD_POINTS + GOOD_POINTS
    assert t.problems["undecodable"] == 5
    assert t.problems["length crc"] == 0


def test_a_bad_data_crc_skips_that_record_when_checked(monkeypatch) -> None:
    """With a CRC-32C for the data (crc32c or google_crc32c installed; here the table one)."""
    monkeypatch.setattr(tb, "_data_crc", tb.crc32c)
    data = bytearray(GOOD)
    k = len(GOOD_ENDS) // 2
    data[GOOD_ENDS[k] - 6] ^= 0x01  # inside record k+1's data (its simple_value)
    t, got = read_bytes(bytes(data))
    assert got == GOOD_POINTS[: k - 1] + GOOD_POINTS[k:]
    assert t.problems["data crc"] == 1


def test_non_scalar_values_are_counted() -> None:
    tensor = b"\x08\x01\x12\x04\x12\x02\x08\x02\x22\x08" + b"\x00" * 8  # float[2]: not one number
    tensor_8 = b"\x42" + bytes([len(tensor)]) + tensor
    meta = b"\x4a\x0b\x0a\x09\x0a\x07scalars"  # metadata {plugin_data {plugin_name: "scalars"}}
    value = b"\x0a\x01t" + tensor_8 + meta
    summary = b"\x2a" + bytes([len(value) + 2, 0x0A, len(value)]) + value
    graph = b"\x22\x03abc"
    t, got = read_bytes(tb.frame(summary) + tb.frame(graph) + tb.frame(tb.version_event(1.0)), calls=1)
    assert got == [] and t.problems["not scalar"] == 2 and t.problems["undecodable"] == 0


def _tensor_event(tensor: bytes, step: int = 7) -> bytes:
    meta = tb._put_len(1, tb._put_len(1, b"scalars"))
    value = tb._put_len(1, b"x") + tb._put_len(8, tensor) + tb._put_len(9, meta)
    return b"\x09" + struct.pack("<d", 5.0) + b"\x10" + tb._put_varint(step) + tb._put_len(5, tb._put_len(1, value))


def _packed(field: int, *varints: int) -> bytes:
    return tb._put_len(field, b"".join(tb._put_varint(v) for v in varints))


@pytest.mark.parametrize(
    ("tensor", "value"),
    [
        (b"\x08\x09" + _packed(10, -5), -5.0),  # DT_INT64, int64_val
        (b"\x08\x03" + _packed(7, -3 & 0xFFFFFFFFFFFFFFFF), -3.0),  # DT_INT32, int_val (sign-extended)
        (b"\x08\x13" + _packed(13, 0x3E00), 1.5),  # DT_HALF, half_val
        (b"\x08\x0e" + _packed(13, 0x3FC0), 1.5),  # DT_BFLOAT16, half_val
        (b"\x08\x02" + tb._put_len(4, struct.pack("<d", 0.1)), 0.1),  # DT_DOUBLE, tensor_content
        (b"\x08\x09" + tb._put_len(4, struct.pack("<q", 2**40)), float(2**40)),  # DT_INT64, tensor_content
        (b"\x08\x01" + tb._put_len(2, b"") + b"\x2d" + struct.pack("<f", 2.5), 2.5),  # rank 0, unpacked float_val
        (b"\x08\x01" + tb._put_len(2, tb._put_len(2, b"\x08\x01")) + _packed(5), None),  # [1] but no value
        (b"\x08\x07" + tb._put_len(8, b"abc"), None),  # DT_STRING
        (b"\x08\x01" + tb._put_len(2, b"\x18\x01") + b"\x2d" + struct.pack("<f", 2.5), None),  # unknown rank
    ],
)
def test_tensor_scalar_forms(tensor: bytes, value: float | None) -> None:
    t, got = read_bytes(tb.frame(_tensor_event(tensor)), calls=1)
    if value is None:
        assert got == [] and t.problems["not scalar"] == 1
    else:
        assert got == [("x", 7, 5.0, value)]
        assert sum(t.problems.values()) == 0


def test_a_bad_head_rewritten_in_place_is_read_on(tmp_path: Path) -> None:
    """Zeros where a record will be (a filesystem that shows the file's new size before its bytes):
    stopped there, then read on once the real bytes are in."""
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    rest = GOOD[GOOD_ENDS[0] :]
    path.write_bytes(GOOD + bytes(len(rest)))
    t = tb.EventsFileTail(str(path))
    assert points(t.read()) == GOOD_POINTS and t.problems["length crc"] == 1
    assert len(t.read()) == 0
    with open(path, "r+b") as f:
        f.seek(len(GOOD))
        f.write(rest)
        f.write(b"\x00")  # the size changes too: a changed mtime alone may fall in the same tick
    assert points(t.read()) == GOOD_POINTS
    assert t.problems["length crc"] == 1 and t.restarted == 0
