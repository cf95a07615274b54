"""The W&B offline reader: real wandb files give the sample logs' rows, tails see only whole records,
folders of one id merge, damage is counted and never raises."""

from __future__ import annotations

import math
import os
import random
import shutil
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.records import Event, MetricRecord
from grpo_tui.sidecar import wandb_offline
from grpo_tui.sidecar.wandb_offline import WandbFileTail, WandbRunTail, find_wandb_runs
from tests.unit.sidecar import wandb_write as ww

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "sidecars" / "wandb"
SAMPLES = ("healthy-seed1", "gap-jump", "length-hacking", "no-signal", "non-finite", "crashed")
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WANDB_KEYS = ("_step", "_timestamp", "_runtime")


def comparable(row: dict) -> dict:
    """NaN equal to NaN; wandb's own keys left out."""
    return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items() if k not in WANDB_KEYS}


def sample_items(sample: str) -> list:
    text = (REPO / "sample_logs" / f"{sample}.log").read_text(encoding="utf-8", errors="replace")
    parser = LineParser()
    return list(parser.feed_lines(text.splitlines())) + list(parser.flush())


def expected_rows(sample: str) -> tuple[list[dict], list[dict]]:
    """The rows scripts/make_wandb_fixtures.py logged: (train actor's, rollout manager's)."""
    train: list[dict] = []
    rollout: list[dict] = []
    for item in sample_items(sample):
        if isinstance(item, MetricRecord):
            key = {"step": "train/step", "eval": "eval/step"}.get(item.kind, "rollout/step")
            row = comparable({**item.metrics, key: item.n})
            (rollout if item.actor == "RolloutManager" else train).append(row)
    return train, rollout


def read_all(path: str | Path) -> tuple[list, WandbFileTail]:
    tail = WandbFileTail(str(path))
    return tail.read(), tail


def only(records: list, kind: str) -> list[dict]:
    return [data for k, data in records if k == kind]


# ----------------------------------------------------------------------------- real files
@pytest.mark.parametrize("sample", SAMPLES)
def test_fixture_gives_the_sample_logs_rows(sample: str) -> None:
    runs = find_wandb_runs(str(FIXTURES / sample))
    assert len(runs) == 1
    run_id, files = next(iter(runs.items()))
    assert len(files) == 3  # the driver, the train actor, the rollout manager
    flags = next(i for i in sample_items(sample) if isinstance(i, Event) and i.kind == "launch").data["flags"]
    histories = []
    for path in files:
        records, tail = read_all(path)
        assert not any(tail.problems.values())
        assert tail.offset == os.path.getsize(path)
        (run,) = only(records, "run")
        assert run["run_id"] == run_id
        assert isinstance(run["start_time"], float)
        assert run["config"]["rollout_batch_size"] == int(flags["rollout-batch-size"])
        assert run["config"]["n_samples_per_prompt"] == int(flags["n-samples-per-prompt"])
        assert run["config"]["global_batch_size"] == int(flags["global-batch-size"])
        assert set(run["config"]) >= {k.replace("-", "_") for k in flags}
        assert only(records, "exit") == [{"exit_code": 1 if sample == "crashed" else 0}]
        rows = only(records, "history")
        assert all(set(WANDB_KEYS) <= set(row) for row in rows)
        assert [row["_step"] for row in rows] == list(range(len(rows)))
        histories.append([comparable(row) for row in rows])
    assert only(read_all(files[0])[0], "run")[0]["display_name"] == sample
    assert histories == [[], *expected_rows(sample)]


def test_nonfinite_values_come_back_as_floats() -> None:
    (files,) = find_wandb_runs(str(FIXTURES / "non-finite")).values()
    rows = [row for path in files for row in only(read_all(path)[0], "history")]
    norms = [row["train/grad_norm"] for row in rows if "train/grad_norm" in row]
    assert any(math.isnan(v) for v in norms) or any(math.isinf(v) for v in norms)
    assert all(isinstance(v, float) for v in norms if not isinstance(v, int))


def test_the_test_writer_makes_wandbs_bytes() -> None:
    # the benchmark and the damage tests build files with it: it must lay chunks out as wandb does
    for path in sorted(FIXTURES.glob("*/wandb/*/*.wandb")):
        data = path.read_bytes()
        assert ww.write_log(ww.payloads(data)) == data


def test_a_file_cut_inside_a_record() -> None:
    (cut,) = (FIXTURES / "cut").glob("*.wandb")
    (whole,) = (
        p for p in FIXTURES.glob("healthy-seed1/wandb/*/*.wandb") if p.name == cut.name and p.stat().st_size > 200_000
    )
    records, tail = read_all(cut)
    assert not any(tail.problems.values())
    assert tail.offset < cut.stat().st_size  # the record it ends in is not returned
    assert cut.read_bytes() == whole.read_bytes()[: cut.stat().st_size]
    full = read_all(whole)[0]
    assert 0 < len(records) < len(full)
    assert records == full[: len(records)]


# ----------------------------------------------------------------------------- tailing
def grow_and_read(data: bytes, cuts: list[int]) -> tuple[list, WandbFileTail, list[int]]:
    """Write `data` to a file in pieces, reading after each; the records, the tail, the counts per read."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run-x.wandb")
        tail = WandbFileTail(path)
        got: list = []
        counts = []
        pos = 0
        with open(path, "wb") as f:
            for size in [*cuts, len(data)]:
                f.write(data[pos : pos + size])
                f.flush()
                pos = min(len(data), pos + size)
                new = tail.read()
                counts.append(len(new))
                got.extend(new)
                if pos == len(data):
                    break
        got.extend(tail.read())
        return got, tail, counts


ROLLOUT_FILE = min(FIXTURES.glob("healthy-seed1/wandb/*/*.wandb"), key=lambda p: abs(p.stat().st_size - 110_000))


@FAST
@given(st.lists(st.integers(1, 40_000), max_size=40))
def test_growing_file_gives_the_same_records(cuts: list[int]) -> None:
    data = ROLLOUT_FILE.read_bytes()
    whole = read_all(ROLLOUT_FILE)[0]
    got, tail, _ = grow_and_read(data, cuts)
    assert got == whole
    assert not any(tail.problems.values())


def test_nothing_incomplete_is_returned_early() -> None:
    data = ROLLOUT_FILE.read_bytes()
    ends = [off + 7 + len(p) for off, kind, p in ww.read_chunks(data) if kind in (ww.FULL, ww.LAST)]
    # the records of kinds the reader returns (not wandb's telemetry, stats, define_metric...)
    returned = [len(read_all_bytes(ww.write_log([p]))[0]) for p in ww.payloads(data)]
    assert len(returned) == len(ends) and set(returned) == {0, 1}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run-x.wandb")
        tail = WandbFileTail(path)
        seen = 0
        with open(path, "wb") as f:
            for size in [*range(0, len(data), 997), len(data)]:
                f.write(data[f.tell() : size])
                f.flush()
                seen += len(tail.read())
                assert seen == sum(n for end, n in zip(ends, returned) if end <= size)
                assert tail.offset <= max(size, len(ww.HEADER))


def big_records() -> tuple[list[bytes], list[dict]]:
    rows = [{"i": 0, "s": "a"}, {"i": 1, "s": "b" * 70_000}, {"i": 2, "s": "c"}, {"i": 3, "s": "d" * 40_000}]
    return [ww.history(row) for row in rows], rows


def test_a_record_over_several_blocks_is_put_together() -> None:
    payloads, rows = big_records()
    data = ww.write_log(payloads)
    kinds = [kind for _, kind, _ in ww.read_chunks(data)]
    assert ww.MIDDLE in kinds and ww.FIRST in kinds and ww.LAST in kinds
    got, tail, _ = grow_and_read(data, [1000] * 200)
    assert only(got, "history") == rows
    assert not any(tail.problems.values())


def test_small_windows_give_the_same_records(monkeypatch: pytest.MonkeyPatch) -> None:
    expected_fixture_records = read_all(ROLLOUT_FILE)[0]
    # a read goes through the file a window at a time; records across windows, and a damaged block
    # skipped past the window's end, must come out the same
    payloads, rows = big_records()
    data = bytearray(ww.write_log(payloads + DAMAGE_PAYLOADS))
    data[7 + 3] ^= 1  # the first chunk's crc: the rest of block 0 is skipped
    whole = read_all_bytes(bytes(data))
    monkeypatch.setattr(wandb_offline, "WINDOW", 1000)
    assert read_all_bytes(bytes(data))[0] == whole[0]
    assert read_all_bytes(bytes(data))[1].problems == whole[1].problems
    assert whole[1].problems["chunk crc"] == 1
    assert only(whole[0], "history")[-len(DAMAGE_ROWS) :] == DAMAGE_ROWS
    assert read_all(ROLLOUT_FILE)[0] == expected_fixture_records


def test_a_replaced_or_shrunk_file_is_read_again() -> None:
    one = ww.write_log([ww.history({"a": 1}), ww.history({"a": 2})])
    two = ww.write_log([ww.history({"b": 1})])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run-x.wandb")
        Path(path).write_bytes(one)
        tail = WandbFileTail(path)
        assert only(tail.read(), "history") == [{"a": 1}, {"a": 2}]
        Path(path).write_bytes(two)  # shorter
        assert only(tail.read(), "history") == [{"b": 1}]
        other = os.path.join(tmp, "new")
        Path(other).write_bytes(one)
        os.replace(other, path)  # a new file (inode) of any size
        assert only(tail.read(), "history") == [{"a": 1}, {"a": 2}]
        os.unlink(path)
        assert tail.read() == []


# ----------------------------------------------------------------------------- records
def test_record_kinds_and_values() -> None:
    nested = ww.field(1, ww.field(1, b"n") + ww.field(2, b"a") + ww.field(2, b"b") + ww.field(16, b"5"))
    wrapped = ww.field(1, ww.field(1, b"k" * 200) + ww.field(16, b'"x,y"'))
    data = ww.write_log(
        [
            ww.run("abc", {"rollout_batch_size": 32, "name": "x, y"}, "shown", 1_700_000_000, 500_000_000),
            ww.config({"lr": 1e-6}),
            ww.record(2, nested + wrapped),
            ww.history({"x": float("nan"), "y": float("inf"), "z": -float("inf"), "b": True, "none": None, "s": "hi"}),
            ww.summary({"x": 1.5}),
            ww.record(12, b"\x0a\x03abc"),  # a define_metric: not read
            ww.exit_record(-3),
        ]
    )
    assert [k for k, _ in read_all_bytes(data)[0]] == ["run", "config", "history", "history", "exit"]
    records, tail = read_all_bytes(data, summaries=True)
    assert [k for k, _ in records] == ["run", "config", "history", "history", "summary", "exit"]
    assert records[0][1] == {
        "run_id": "abc",
        "display_name": "shown",
        "config": {"rollout_batch_size": 32, "name": "x, y"},
        "start_time": 1_700_000_000.5,
    }
    assert records[1][1] == {"lr": 1e-6}
    assert records[2][1] == {"n/a/b": 5, "k" * 200: "x,y"}
    row = records[3][1]
    assert math.isnan(row["x"]) and row["y"] == math.inf and row["z"] == -math.inf
    assert (row["b"], row["none"], row["s"]) == (True, None, "hi")
    assert records[4][1] == {"x": 1.5}
    assert records[5][1] == {"exit_code": -3}
    assert not any(tail.problems.values())


def read_all_bytes(data: bytes, summaries: bool = False) -> tuple[list, WandbFileTail]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run-x.wandb")
        Path(path).write_bytes(data)
        tail = WandbFileTail(path, summaries=summaries)
        return tail.read(), tail


@pytest.mark.parametrize(
    "values, expected, bad",
    [
        ([b"[1", b"2]"], {}, 2),  # one array across two values is not two values
        ([b"1,2", b"3"], {"k1": 3}, 1),
        ([b"{", b"4"], {"k1": 4}, 1),
        ([b"", b"4"], {"k1": 4}, 1),
        ([b"[" * 100_000, b"4"], {"k1": 4}, 1),  # deeper than json's recursion limit
        ([b"\xff", b"4"], {"k1": 4}, 1),
        ([b"1" * 5000, b"4"], {"k1": 4}, 1),  # past int()'s digit limit
        ([b'"a,b"', b"[1, 2]"], {"k0": "a,b", "k1": [1, 2]}, 0),
    ],
)
def test_bad_json_is_counted_per_value(values: list[bytes], expected: dict, bad: int) -> None:
    body = b"".join(ww.field(1, ww.field(2, f"k{i}".encode()) + ww.field(16, v)) for i, v in enumerate(values))
    records, tail = read_all_bytes(ww.write_log([ww.record(2, body)]))
    assert records == [("history", expected)]
    assert tail.problems["bad json"] == bad


# ----------------------------------------------------------------------------- finding and merging
def make_run_folder(top: Path, name: str, run_id: str, rows: list[dict]) -> Path:
    folder = top / name
    folder.mkdir(parents=True)
    path = folder / f"run-{run_id}.wandb"
    path.write_bytes(ww.write_log([ww.run(run_id, {}), *(ww.history(r) for r in rows)]))
    return path


def test_folders_of_one_id_are_found_and_read_together(tmp_path: Path) -> None:
    top = tmp_path / "wandb"
    a = make_run_folder(top, "offline-run-20260101_000000-id1", "id1", [{"x": 1}])
    b = make_run_folder(top, "offline-run-20260101_000005-id1", "id1", [{"y": 1}])
    c = make_run_folder(top, "offline-run-20260101_000009-id2", "id2", [{"z": 1}])
    os.symlink("offline-run-20260101_000009-id2", top / "latest-run")
    (top / "debug.log").write_text("")
    expected = {"id1": [str(a), str(b)], "id2": [str(c)]}
    assert find_wandb_runs(str(top)) == expected
    assert find_wandb_runs(str(tmp_path)) == expected  # the folder holding `wandb`
    assert find_wandb_runs(str(a.parent)) == {"id1": [str(a)]}
    assert find_wandb_runs(str(c)) == {"id2": [str(c)]}
    assert find_wandb_runs(str(top / "latest-run")) == {"id2": [str(top / "latest-run" / c.name)]}
    assert find_wandb_runs(str(tmp_path / "nothing")) == {}
    assert find_wandb_runs(str(a.parent / "files")) == {}

    run = WandbRunTail(str(tmp_path), "id1")
    got = run.read()
    assert [(path, only(records, "history")) for path, records in got] == [(str(a), [{"x": 1}]), (str(b), [{"y": 1}])]
    assert run.files == [str(a), str(b)]
    assert run.read() == []
    d = make_run_folder(top, "offline-run-20260101_000100-id1", "id1", [{"w": 2}])
    assert [(path, only(records, "history")) for path, records in run.read()] == [(str(d), [{"w": 2}])]
    assert run.files == [str(a), str(b), str(d)]
    assert not any(run.problems.values())


def test_latest_run_outside_is_read_once(tmp_path: Path) -> None:
    elsewhere = make_run_folder(tmp_path / "else", "offline-run-20260101_000000-id9", "id9", [])
    top = tmp_path / "wandb"
    top.mkdir()
    os.symlink(elsewhere.parent, top / "latest-run")
    make_run_folder(top, "offline-run-20260101_000000-id1", "id1", [])
    runs = find_wandb_runs(str(top))
    assert sorted(runs) == ["id1", "id9"] and len(runs["id9"]) == 1


# ----------------------------------------------------------------------------- damage
def numbered(n: int, seed: int = 0) -> tuple[list[bytes], list[dict]]:
    """n history records of varied sizes (a few cross blocks), each with its index."""
    rand = random.Random(seed)
    rows = [{"i": i, "pad": "p" * rand.choice([10, 300, 3000, 20_000])} for i in range(n)]
    return [ww.history(r) for r in rows], rows


DAMAGE_PAYLOADS, DAMAGE_ROWS = numbered(40)
DAMAGE_FILE = ww.write_log(DAMAGE_PAYLOADS)


def spans(data: bytes) -> list[tuple[int, int]]:
    """(first byte, end) of each record's chunks, to know which records damage may touch."""
    out = []
    start = 0
    for off, kind, payload in ww.read_chunks(data):
        if kind in (ww.FULL, ww.FIRST):
            start = off
        if kind in (ww.FULL, ww.LAST):
            out.append((start, off + 7 + len(payload)))
    return out


SPANS = spans(DAMAGE_FILE)


def indices(records: list) -> list[int]:
    return [data["i"] for kind, data in records if kind == "history"]


def survivors(damaged: list[int], data: bytes = DAMAGE_FILE) -> set[int]:
    """The records a reader must still give: those wholly in blocks before the first damaged block,
    or wholly in blocks after the last one."""
    first = min(damaged) // ww.BLOCK
    last = max(damaged) // ww.BLOCK
    return {i for i, (s, e) in enumerate(spans(data)) if (e - 1) // ww.BLOCK < first or s // ww.BLOCK > last}


@FAST
@given(st.binary(max_size=5000))
def test_random_bytes_never_raise(data: bytes) -> None:
    for blob in (data, ww.HEADER + data):
        records, tail = read_all_bytes(blob)
        assert all(isinstance(kind, str) and isinstance(data, dict) for kind, data in records)
        assert tail.read() == []  # and a second read gives nothing more


@FAST
@given(st.lists(st.integers(len(ww.HEADER) * 8, len(DAMAGE_FILE) * 8 - 1), min_size=1, max_size=3))
def test_flipped_bits(bits: list[int]) -> None:
    data = bytearray(DAMAGE_FILE)
    for bit in bits:
        data[bit // 8] ^= 1 << (bit % 8)
    records, tail = read_all_bytes(bytes(data))
    got = indices(records)
    assert got == sorted(set(got))  # in order, no record twice, none made up
    assert all(DAMAGE_ROWS[i] == data_ for i, (k, data_) in zip(got, records, strict=False) if k == "history")
    assert survivors([b // 8 for b in bits]) <= set(got)
    if len(got) < len(DAMAGE_ROWS):
        assert sum(tail.problems.values()) > 0


@FAST
@given(st.integers(0, len(DAMAGE_FILE)))
def test_truncation_anywhere(cut: int) -> None:
    records, tail = read_all_bytes(DAMAGE_FILE[:cut])
    assert indices(records) == [i for i, (_, e) in enumerate(SPANS) if e <= cut]
    assert not any(tail.problems.values())
    assert tail.offset <= max(cut, len(ww.HEADER))


@FAST
@given(st.binary(min_size=7, max_size=7))
def test_a_bad_header(head: bytes) -> None:
    records, tail = read_all_bytes(head + DAMAGE_FILE[7:])
    if head == ww.HEADER:
        assert len(indices(records)) == len(DAMAGE_ROWS)
    elif head[:6] == ww.HEADER[:6]:  # another version: not read
        assert records == [] and tail.problems["bad header"] == 1
    else:  # a damaged header: the chunks still have their crcs
        assert len(indices(records)) == len(DAMAGE_ROWS) and tail.problems["bad header"] == 1


def test_a_short_file_that_is_no_header() -> None:
    assert read_all_bytes(b":W&")[1].problems["bad header"] == 0  # may still become one
    records, tail = read_all_bytes(b"PK\x03")
    assert records == [] and tail.problems["bad header"] == 1


@FAST
@given(st.integers(0, len(ww.read_chunks(DAMAGE_FILE)) - 1), st.integers(0, 0xFFFF))
def test_absurd_lengths(which: int, length: int) -> None:
    off, kind, payload = ww.read_chunks(DAMAGE_FILE)[which]
    data = bytearray(DAMAGE_FILE)
    struct.pack_into("<H", data, off + 4, length)
    records, tail = read_all_bytes(bytes(data))
    got = indices(records)
    assert got == sorted(set(got))
    if length != len(payload):
        assert survivors([off]) <= set(got)


def test_chunks_out_of_order() -> None:
    a, b, c = (ww.history({"i": i}) for i in range(3))
    data = (
        ww.HEADER
        + b"".join(
            [
                ww.chunk(ww.FULL, a),
                ww.chunk(ww.MIDDLE, b"stray"),  # MIDDLE without FIRST
                ww.chunk(ww.LAST, b"stray"),
                ww.chunk(ww.FIRST, b[:3]),  # a FIRST never finished...
                ww.chunk(ww.FIRST, b[:4]),  # ...and a record that is
                ww.chunk(ww.LAST, b[4:]),
                ww.chunk(ww.LAST, b"stray"),  # LAST without FIRST
                ww.chunk(9, b"?"),  # no such type
                ww.chunk(ww.FULL, c),
            ]
        )
    )
    records, tail = read_all_bytes(data)
    assert indices(records) == [0, 1, 2]
    assert tail.problems["chunk sequence"] == 3
    assert tail.problems["chunk type"] == 1


def test_a_zeroed_block_and_a_bad_crc_skip_to_the_next_block() -> None:
    payloads, rows = numbered(12, seed=3)
    data = bytearray(ww.write_log(payloads))
    off = next(o for o, kind, _ in ww.read_chunks(bytes(data)) if o > 100 and kind == ww.FULL)
    whole = bytes(data)
    data[off : off + 7] = bytes(7)
    records, tail = read_all_bytes(bytes(data))
    assert tail.problems["zeroed block"] == 1
    assert survivors([off], whole) <= set(indices(records))
    data = bytearray(DAMAGE_FILE)
    off = ww.read_chunks(DAMAGE_FILE)[5][0]
    data[off] ^= 0xFF
    records, tail = read_all_bytes(bytes(data))
    assert tail.problems["chunk crc"] == 1
    assert survivors([off]) <= set(indices(records))


def test_a_record_too_long_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wandb_offline, "MAX_RECORD", 50_000)
    payloads, _ = big_records()
    records, tail = read_all_bytes(ww.write_log(payloads))
    assert [r["i"] for r in only(records, "history")] == [0, 2, 3]
    assert tail.problems["record too long"] == 1
    assert tail.problems["chunk sequence"] == 0


def test_undecodable_records_are_counted() -> None:
    records, tail = read_all_bytes(
        ww.write_log([b"\x12\xff\xff\xff\xff\x0f", b"\x0f", b"\x08" + b"\xff" * 20, ww.history({"i": 0})])
    )
    assert indices(records) == [0]
    assert tail.problems["undecodable"] == 3


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    path = tmp_path / "run-x.wandb"
    os.mkfifo(path)
    assert WandbFileTail(str(path)).read() == []
    assert find_wandb_runs(str(path)) == {}


def test_fixture_copies_can_be_moved(tmp_path: Path) -> None:
    # the paths returned are the ones given, under a copy too
    shutil.copytree(FIXTURES / "crashed", tmp_path / "crashed")
    (files,) = find_wandb_runs(str(tmp_path / "crashed")).values()
    assert all(f.startswith(str(tmp_path)) for f in files)
