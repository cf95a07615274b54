"""grpo_tui.sidecar.tensorboard on files the real writer (tensorboardX) made from the sample logs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui.sidecar import tensorboard as tb

from .conftest import SAMPLES, TB_FIXTURES, points, record_ends, train_file

PROCESS_OF_PID = {"100": "driver", "101": "train", "102": "rollout"}


def f32(v: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def expected(maker, sample: str) -> dict[str, list]:
    """Per process: the (tag, step, wall, float32 value) the sample log's records make."""
    out: dict[str, list] = {"driver": [], "train": [], "rollout": []}
    for proc, key, value, step, wall in maker.scalar_points(maker.records(sample)):
        v = f32(value)
        out[proc].append((key, step, wall, "nan" if v != v else v))
    return out


# ----------------------------------------------------------------------------- CRC-32C


def test_crc32c_known_vectors() -> None:
    assert tb.crc32c(b"123456789") == 0xE3069283
    assert tb.crc32c(b"") == 0
    # RFC 3720 (iSCSI) B.4
    assert tb.crc32c(bytes(32)) == 0x8A9136AA
    assert tb.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert tb.crc32c(bytes(range(32))) == 0x46DD794E
    assert tb.crc32c(b"456789", tb.crc32c(b"123")) == 0xE3069283


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=8, max_size=8), min_size=1, max_size=40))
def test_crc32c_rows_equal_the_scalar_form(rows: list[bytes]) -> None:
    arr = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(-1, 8)
    got = tb._mask_rows(tb.crc32c_rows(arr)).tolist()
    assert got == [tb.masked_crc32c(r) for r in rows]


# ----------------------------------------------------------------------------- the fixtures


@pytest.mark.parametrize("sample", SAMPLES)
def test_fixture_holds_the_sample_logs_numbers(maker, sample: str) -> None:
    folder = TB_FIXTURES / sample
    want = expected(maker, sample)
    tail = tb.EventsFolderTail(str(folder))
    got = dict(tail.read())
    assert len(tail.files) == 3
    for path in tail.files:
        proc = PROCESS_OF_PID[path.rsplit(".", 2)[-2]]
        if proc == "driver":
            assert path not in got  # the driver's file holds only its file_version Event
        else:
            assert points(got[path]) == want[proc], (sample, proc)
    assert tail.problems == dict.fromkeys(tb.PROBLEMS, 0)
    assert tail.read() == []  # nothing new


@pytest.mark.parametrize("sample", SAMPLES)
def test_writer_helpers_write_the_real_writers_bytes(maker, sample: str) -> None:
    """frame / version_event / scalar_event (used by the benchmark) against tensorboardX's bytes."""
    raw = maker.scalar_points(maker.records(sample))
    for path in sorted((TB_FIXTURES / sample).iterdir()):
        proc = PROCESS_OF_PID[path.name.rsplit(".", 2)[-2]]
        first = raw[0][4]
        made = tb.frame(tb.version_event(first)) + b"".join(
            tb.frame(tb.scalar_event(key, value, step, wall)) for p, key, value, step, wall in raw if p == proc
        )
        assert made == path.read_bytes(), (sample, proc)


def test_fixture_through_the_general_decoder_alone(monkeypatch) -> None:
    """The column-wise fast path and the protobuf wire decoder read the same points."""
    path = str(train_file("non-finite"))
    fast = points(tb.EventsFileTail(path).read())

    def nothing_fast(data, d0, d1):
        ok, a, z = real(data, d0, d1)
        return np.zeros_like(ok), a, z

    real = tb._fast_layout
    monkeypatch.setattr(tb, "_fast_layout", nothing_fast)
    slow = points(tb.EventsFileTail(path).read())
    assert slow == fast and len(fast) > 1000


def test_tf2_tensor_scalars(maker) -> None:
    """TF2's form: a rank-0 tensor of the scalars plugin (float content, float_val, double_val);
    the histograms and texts beside them are counted, not read."""
    want = []
    for _proc, key, value, step, wall in maker.scalar_points(maker.records("healthy-seed1")):
        if step < 6:
            v = value if maker.tf2_kind(key) == "double_val" else f32(value)
            want.append((key, step, wall, v))
    tail = tb.EventsFolderTail(str(TB_FIXTURES / "tf2-scalars"))
    ((_, got),) = tail.read()
    assert points(got) == want
    assert tail.problems["not scalar"] == 12  # 6 rollouts x (histogram + text)
    assert sum(tail.problems.values()) == 12


def test_truncated_fixture_stops_before_the_partial_record(tmp_path: Path) -> None:
    (src,) = (TB_FIXTURES / "truncated").iterdir()
    data = src.read_bytes()
    ends = record_ends(data)
    t = tb.EventsFileTail(str(src))
    s = t.read()
    assert len(s) == len(ends) - 1  # minus the file_version record
    assert t.offset == ends[-1] < len(data)
    assert len(t.read()) == 0 and t.offset == ends[-1]
    assert t.problems == dict.fromkeys(tb.PROBLEMS, 0)


# ----------------------------------------------------------------------------- folders


def test_events_files_and_find_event_folders(tmp_path: Path) -> None:
    def touch(p: Path) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")

    touch(tmp_path / "runs" / "a" / "events.out.tfevents.2.h.1.0")
    touch(tmp_path / "runs" / "a" / "events.out.tfevents.1.h.1.0")
    touch(tmp_path / "runs" / "a" / "notes.txt")
    touch(tmp_path / "runs" / "b" / "x" / "events.out.tfevents.3.h.1.0")
    touch(tmp_path / "runs" / "c" / "1" / "2" / "3" / "events.out.tfevents.3.h.1.0")  # depth 4: too deep
    (tmp_path / "runs" / "a" / "events.out.tfevents.dir").mkdir()
    a = str(tmp_path / "runs" / "a")
    assert tb.events_files(a) == [
        os.path.join(a, "events.out.tfevents.1.h.1.0"),
        os.path.join(a, "events.out.tfevents.2.h.1.0"),
    ]
    assert tb.events_files(str(tmp_path / "missing")) == []
    assert tb.find_event_folders(a) == [a]
    assert tb.find_event_folders(str(tmp_path / "runs")) == [a, str(tmp_path / "runs" / "b" / "x")]
    assert tb.find_event_folders(str(tmp_path / "nope")) == []
    assert tb.find_event_folders(str(tmp_path / "runs" / "a" / "notes.txt")) == []


def test_the_real_writers_data_crcs_check(monkeypatch) -> None:
    """With a data CRC (crc32c / google_crc32c when installed; here the table one) every record holds."""
    path = str(train_file("gap-jump"))
    unchecked = points(tb.EventsFileTail(path).read())
    monkeypatch.setattr(tb, "_data_crc", tb.crc32c)
    t = tb.EventsFileTail(path)
    assert points(t.read()) == unchecked
    assert t.problems == dict.fromkeys(tb.PROBLEMS, 0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=140),  # past 127 bytes a tag's length takes two bytes: the general decoder's
            st.floats(width=32),
            st.integers(-(2**63), 2**63 - 1),
            st.sampled_from([0.0, 1.7e9, -1.5]) | st.floats(allow_nan=False),
        ),
        max_size=30,
    )
)
def test_any_add_scalar_event_reads_back(events: list[tuple[str, float, int, float]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.out.tfevents.1.h.1.0")
        with open(path, "wb") as f:
            f.write(tb.frame(tb.version_event(1.0)))
            f.write(b"".join(tb.frame(tb.scalar_event(*e)) for e in events))
        t = tb.EventsFileTail(path)
        got = points(t.read())
    want = [(tag, step, wall, "nan" if v != v else v) for tag, v, step, wall in events]
    assert got == want
    assert sum(t.problems.values()) == 0
