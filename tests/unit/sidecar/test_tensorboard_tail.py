"""Tailing TensorBoard files as writers grow them: cut anywhere, several at once, replaced, truncated."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from grpo_tui.sidecar import tensorboard as tb

from .conftest import TB_FIXTURES, points, record_ends, train_file

CRASHED = train_file("crashed").read_bytes()
CRASHED_ENDS = set(record_ends(CRASHED))
WHOLE = points(tb.EventsFileTail(str(train_file("crashed"))).read())
# the fuzzed tail reads a head of that file: ~190 records keep 1-byte cuts affordable
HEAD = CRASHED[: max(e for e in CRASHED_ENDS if e <= 12_000) + 7]
HEAD_ENDS = {e for e in CRASHED_ENDS if e <= len(HEAD)}
HEAD_WHOLE = WHOLE[: len(HEAD_ENDS) - 1]


def rollout_file(sample: str) -> Path:
    (p,) = (TB_FIXTURES / sample).glob("*.102.0")
    return p


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9000), min_size=1, max_size=60), st.none() | st.integers(1, 5000))
def test_growing_file_in_random_cuts_reads_as_one_read(cuts: list[int], max_bytes: int | None) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.out.tfevents.1.h.1.0")
        t = tb.EventsFileTail(path)
        got: list = []
        written = 0
        with open(path, "wb", buffering=0) as f:
            i = 0
            while written < len(HEAD):
                n = cuts[i % len(cuts)]
                i += 1
                f.write(HEAD[written : written + n])
                written = min(written + n, len(HEAD))
                s = t.read(max_bytes)
                got += points(s)
                # never past the bytes written, and always at a record's end: no partial record returned
                assert t.offset <= written and (t.offset == 0 or t.offset in HEAD_ENDS)
                assert len(got) <= len(HEAD_WHOLE)
            for _ in range(len(HEAD)):  # with max_bytes a call may leave whole records for the next
                s = t.read(max_bytes)
                got += points(s)
                if t.offset == max(HEAD_ENDS):
                    break
            assert len(t.read(max_bytes)) == 0  # the partial record at the end stays unread
    assert got == HEAD_WHOLE
    assert t.problems == dict.fromkeys(tb.PROBLEMS, 0)


def test_tag_ids_stay_stable_across_reads(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    half = sorted(CRASHED_ENDS)[len(CRASHED_ENDS) // 2]
    path.write_bytes(CRASHED[:half])
    t = tb.EventsFileTail(str(path))
    a = t.read()
    tags_before = list(a.tags)
    with open(path, "ab") as f:
        f.write(CRASHED[half:])
    b = t.read()
    assert b.tags[: len(tags_before)] == tags_before and b.tags is t.tags
    assert points(a) + points(b) == WHOLE


def test_folder_of_files_growing_at_once_and_a_file_added_later(tmp_path: Path) -> None:
    train = train_file("healthy-seed1").read_bytes()
    rollout = rollout_file("healthy-seed1").read_bytes()
    late = CRASHED
    names = {
        "events.out.tfevents.1.node0.101.0": train,
        "events.out.tfevents.1.node0.102.0": rollout,
        "events.out.tfevents.2.node0.103.0": late,
    }
    whole = {
        n: points(tb.EventsFileTail(str(p)).read())
        for n, p in [
            ("events.out.tfevents.1.node0.101.0", train_file("healthy-seed1")),
            ("events.out.tfevents.1.node0.102.0", rollout_file("healthy-seed1")),
            ("events.out.tfevents.2.node0.103.0", train_file("crashed")),
        ]
    }
    folder = tb.EventsFolderTail(str(tmp_path))
    got: dict[str, list] = {n: [] for n in names}
    done = dict.fromkeys(names, 0)
    step = 0
    while any(done[n] < len(data) for n, data in names.items()):
        step += 1
        for n, data in names.items():
            if n.endswith("103.0") and step < 5:
                continue  # this process starts later
            cut = 1000 + 777 * (step % 5) + 13 * len(n)  # different cuts per file: partial records everywhere
            with open(tmp_path / n, "ab") as f:
                f.write(data[done[n] : done[n] + cut])
            done[n] = min(done[n] + cut, len(data))
        for path, s in folder.read():
            got[os.path.basename(path)] += points(s)
        assert folder.files == sorted(str(tmp_path / n) for n in names if (tmp_path / n).exists())
    assert got == whole
    assert folder.problems == dict.fromkeys(tb.PROBLEMS, 0)
    assert folder.read() == []


def test_a_replaced_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    path.write_bytes(CRASHED)
    t = tb.EventsFileTail(str(path))
    assert points(t.read()) == WHOLE
    other = train_file("healthy-seed1").read_bytes()
    tmp = tmp_path / "new"
    tmp.write_bytes(other[:5000])
    os.replace(tmp, path)  # a new inode under the same name
    s = t.read()
    assert t.restarted == 1
    assert points(s) == points(tb.EventsFileTail(str(train_file("healthy-seed1"))).read())[: len(s)]
    assert len(s) > 0


def test_a_truncated_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    path.write_bytes(CRASHED)
    t = tb.EventsFileTail(str(path))
    t.read()
    with open(path, "r+b") as f:  # same inode, shorter: a writer that started over
        f.truncate(3000)
    s = t.read()
    assert t.restarted == 1 and 0 < t.offset <= 3000
    assert points(s) == WHOLE[: len(s)]


def test_a_file_that_vanishes(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    path.write_bytes(CRASHED)
    folder = tb.EventsFolderTail(str(tmp_path))
    assert len(folder.read()) == 1
    path.unlink()
    assert folder.read() == [] and folder.files == []
    assert tb.EventsFileTail(str(path)).read().tags == []
