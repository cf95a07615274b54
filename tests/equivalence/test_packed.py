"""Packed record values (_scan.c: Packed; LineParser.packed) change nothing but the speed.

A whole-file read (judge_path, feed_file) lets the scanner hand the common rollout, perf and
step records over with their values packed instead of in a dict; the store writes them into its
columns and Python makes the dict only where it reads a record.  Everything a reader can see
must be what the dict path gives: the store in every field, the parser's books, the verdict,
the exported rows, on every sample log, simulated run and fuzzed mix.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import given, strategies as st

from grpo_tui import export, pipeline
from grpo_tui.judge import bulk
from grpo_tui.lines import native
from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.records import MetricRecord
from grpo_tui.pipeline import core as pipeline_core, whole_file
from grpo_tui.simulate import SCENARIOS, SETUPS, generate
from grpo_tui.store import metric_store, steps as step_table
from grpo_tui.store.metric_store import MetricStore
from tests.equivalence.test_scan_equivalence import FUZZ, LOGS, MIX, _cut, _fold_lines, _scan
from tests.equivalence.test_store_kernels import _state as store_state

_REPLAY = bulk.replay  # (each _judged call records through its own wrapper of this)

pytestmark = [
    pytest.mark.accel,
    pytest.mark.skipif(_scan is None or not hasattr(_scan, "Packed"), reason="the C accelerator is not built"),
]


@pytest.fixture
def _this_scanner(monkeypatch):
    """The Packed of the scanner under test (CI's sanitized build is another module; the
    pipeline tests run native.SCAN, whose Packed is the parser's own)."""
    monkeypatch.setattr(native, "PACKED", _scan.Packed)  # (native.unpack's)
    monkeypatch.setattr(metric_store, "PACKED", _scan.Packed)
    monkeypatch.setattr(step_table, "PACKED", _scan.Packed)


def _plain_items(items) -> str:
    out = []
    for x in items:
        if isinstance(x, MetricRecord) and hasattr(x.metrics, "dict"):
            x = dataclasses.replace(x, metrics=x.metrics.dict())
        out.append((type(x).__name__, dataclasses.asdict(x)))
    return repr(out)


# -- the object itself ------------------------------------------------------------------------


@given(
    st.dictionaries(
        st.text(max_size=12),
        st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**63), 2**63 - 1)),
        max_size=70,
    )
)
def test_pack_keeps_names_order_and_types(d):
    p = _scan.pack(d)
    if not d or len(d) > 64:
        assert p is None
        return
    got = p.dict()
    assert list(got) == list(d) == list(p.shape) and len(p) == len(d)
    assert [type(v) for v in got.values()] == [type(v) for v in d.values()]
    assert repr(got) == repr(d)  # floats to the bit (-0.0 too)


def test_pack_refuses_what_is_not_plain():
    for d in (
        {},
        {"a": True},
        {"a": None},
        {"a": "x"},
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": 2**63},
        {1: 1.0},
        {"a": 1.0, **{f"k{i}": 1.0 for i in range(64)}},
    ):
        assert _scan.pack(d) is None, d
    assert _scan.pack({"a": 1.0, "b": 2}).shape is _scan.pack({"a": 3.0, "b": 4}).shape  # one tuple per shape


_LINES = [
    "[2026-08-21 10:00:00.000 a] l.py:2 - rollout 3: {'rollout/raw_reward': 0.5, 'n': 7, 'x': -1.5e-09}",
    "[2026-08-21 10:00:00.000 a] l.py:2 - perf 3: {'perf/rollout_time': 98.46265744066338, 'c': 123456789012345678}",
    "[2026-08-21 10:00:00.000 a] l.py:2 - step 3: {'train/grad_norm': 0.755, 'train/step': 3}",
    "[2026-08-21 10:00:00.000 a] l.py:2 - critic-step 3: {'train/grad_norm': 0.755}",
    "[2026-08-21 10:00:00.000 a] l.py:2 - eval 3: {'eval/acc': 0.5}",  # not a store kind: a dict
    "[2026-08-21 10:00:00.000 a] l.py:2 - rollout 4: {'a': 1, 'a': 2.0}",  # a name twice: a dict
    "[2026-08-21 10:00:00.000 a] l.py:2 - rollout 5: {'\u00e9': 1.0}",  # not ASCII: a dict
    "[2026-08-21 10:00:00.000 a] l.py:2 - rollout 6: {'a': 1.00000000000000000000001}",
]


@pytest.mark.parametrize("line", _LINES)
def test_packed_heads_hold_the_dicts_values(line):
    data = line.encode()
    # a ready head's last item: its record's fields (MetricRecord's order: metrics is the third)
    packed = _scan.scan_folded(data, True)[4][0][-1]
    plain = _scan.scan_folded(data, False)[4][0][-1]
    assert isinstance(plain[2], dict)
    got = packed[2]
    if " eval " in line or "'a': 1, 'a'" in line or "\u00e9" in line:
        assert type(got) is dict
    else:
        assert type(got) is _scan.Packed
        got = got.dict()
    assert repr(got) == repr(plain[2]) and list(map(type, got.values())) == list(map(type, plain[2].values()))
    walk = _scan.scan_raw(data)
    assert repr(_scan.fold_raw(data, walk, True)[4][0][-1][2]) == repr(packed[2])


# -- the parser's books and items: block by block, packed or not ------------------------------


def _parse_blocks(blocks, packed: bool) -> tuple:
    p = LineParser()
    p._scan, p._ready_run = _scan, True
    p.packed = packed
    items = []
    for b in blocks:
        items.extend(p.feed_block(b))
    items.extend(p.flush())
    return (
        _plain_items(items),
        p.counts.as_dict(),
        p.first_ts,
        p.last_ts,
        p._last_stamped,
        {k: list(v) for k, v in p._skipped.items()},
        list(p._noise_run),
        p._last_time,
        p._last_error,
        p._cur_key,
        p._line_cut,
        sorted(p._names),
    ), items


def _blocks(lines, sizes) -> list[bytes]:
    return ["\n".join(b).encode("utf-8", "surrogatepass") for b in _cut(lines, sizes)]


def _assert_parse_same(lines, sizes) -> None:
    lines = [ln.replace("\n", " ") for ln in lines]
    blocks = _blocks(lines, sizes)
    (a, items_a), (b, items_b) = _parse_blocks(blocks, True), _parse_blocks(blocks, False)
    assert a == b
    # and the stores they fill
    sa, sb = MetricStore(), MetricStore()
    sa.add(items_a)
    sb.add(items_b)
    assert store_state(sa) == store_state(sb)


@pytest.mark.usefixtures("_this_scanner")
@FUZZ
@given(
    st.lists(st.one_of(_fold_lines(), MIX, st.sampled_from(_LINES)), max_size=50),
    st.lists(st.integers(1, 15), max_size=4),
)
def test_fuzzed_mixes_agree_packed(lines, sizes):
    _assert_parse_same(lines, sizes)


@pytest.mark.usefixtures("_this_scanner")
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_simulated_runs_parse_the_same_packed(scenario):
    lines = [ln for _, ln in generate(scenario, 24, 3, noise_per_rollout=40)]
    _assert_parse_same(lines, [len(lines)])
    _assert_parse_same(lines, [1, 7, 50, 300])


@pytest.mark.usefixtures("_this_scanner")
def test_names_past_the_cap_agree_packed():
    """A record whose names would pass MAX_NAMES: capped exactly as its dict would be."""
    lines = [
        f"[2026-08-21 10:00:00.000 a] l.py:2 - rollout {i}: {{"
        + ", ".join(f"'k{i}_{j}': {j}.5" for j in range(40))
        + "}"
        for i in range(30)
    ]
    lines += [f"[2026-08-21 10:00:00.000 a] l.py:2 - rollout {30 + i}: {{'k0_1': 1.0, 'k0_2': 2}}" for i in range(3)]
    _assert_parse_same(lines, [len(lines)])
    _assert_parse_same(lines, [7])


# -- the whole pipeline ---------------------------------------------------------------------------


def _judged(path: str, pack: bool, judging: bool, monkeypatch) -> tuple:
    """Everything a whole-file read leaves, and the engine's tape (packed: the records' values as
    _scan.c's Packed, made dicts when the store files them; else dicts from the start)."""
    monkeypatch.setattr(whole_file, "PACK_RECORDS", pack)
    tapes = []

    def record(eng, tape, seg, touch, stamp):
        tapes.append((repr(tape), sorted(touch.items()), stamp))
        return _REPLAY(eng, tape, seg, touch, stamp)

    monkeypatch.setattr(bulk, "replay", record)
    now = os.path.getmtime(path) + 30.0
    pipe = pipeline.judge_path(path, now=now, judging=judging)
    assert pipe.parser.packed is False  # only while the file is read
    pr = pipe.parser
    return (
        tapes,
        pipe.finished_by,
        pipe._fatal,
        pipe._final_done,
        store_state(pipe.store),
        repr(pipe.report(now).to_json(path)) if judging else None,
        pr.counts.as_dict(),
        sorted(pr._names),
        pr._last_time,
        pr._cur_key,
        pr.first_ts,
        pr.last_ts,
        repr(export.rows(pipe.store)),
        repr(export.rows(pipe.store, "step")),
        export.render(pipe.store),
    )


@pytest.mark.skipif(native.SCAN is None, reason="the pipeline runs the pure path")
@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
@pytest.mark.parametrize("judging", [True, False])
def test_judged_logs_agree_packed(path, judging, monkeypatch):
    assert _judged(path, True, judging, monkeypatch) == _judged(path, False, judging, monkeypatch)


@pytest.mark.skipif(native.SCAN is None, reason="the pipeline runs the pure path")
@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_simulated_setups_agree_packed(setup, tmp_path, monkeypatch):
    for scenario, k in (("healthy", 1), ("gap-rising", 2), ("off-policy", 4), ("crashed", 1), ("engine-down", 1)):
        path = tmp_path / f"{setup}-{scenario}.log"
        path.write_text(
            "\n".join(ln for _, ln in generate(scenario, 40, 2, steps_per_rollout=k, setup=setup, noise_per_rollout=30))
        )
        assert _judged(str(path), True, True, monkeypatch) == _judged(str(path), False, True, monkeypatch)


def _runs_in_one_file(tmp_path) -> list[str]:
    """Two runs in one file (a restart: a new segment), a job appended after one finished, a
    crash, and a log without launch flags (no groups: the shape is not remembered)."""
    a = [ln for _, ln in generate("healthy", 30, 1, noise_per_rollout=10)]
    b = [ln for _, ln in generate("gap-jump", 30, 2, noise_per_rollout=10)]
    c = [ln for _, ln in generate("crashed", 30, 3, noise_per_rollout=10)]
    bare = [ln for ln in a if "EXEC:" not in ln and "rollout_batch_size" not in ln]
    paths = []
    for name, lines in (("restart", a + b), ("appended", a + a), ("crash-appended", c + a), ("bare", bare)):
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    return paths


@pytest.mark.skipif(native.SCAN is None, reason="the pipeline runs the pure path")
@pytest.mark.parametrize("judging", [True, False])
def test_restarts_and_appended_runs_agree_packed(tmp_path, monkeypatch, judging):
    for path in _runs_in_one_file(tmp_path):
        assert _judged(path, True, judging, monkeypatch) == _judged(path, False, judging, monkeypatch), path


@pytest.mark.skipif(native.SCAN is None, reason="the pipeline runs the pure path")
def test_a_read_not_judged_files_each_block_as_one_round(tmp_path, monkeypatch):
    """Not judging (export), a block is one round unless an event in it ends the run: the same
    store, books and export as a round per rollout, with a block that holds a job's end and
    the records of the job appended after it, and blocks of a few lines each."""
    rounds = []
    add, store = pipeline.Pipeline._add, pipeline.Pipeline._store
    calls = [0]

    def count_add(self, items):
        calls[0] = 0
        up = add(self, items)
        if items:
            rounds.append(calls[0])
        return up

    def count_store(self, items, up):
        calls[0] += 1
        return store(self, items, up)

    def count(monkeypatch):
        monkeypatch.setattr(pipeline.Pipeline, "_add", count_add)
        monkeypatch.setattr(pipeline.Pipeline, "_store", count_store)

    count(monkeypatch)
    paths = _runs_in_one_file(tmp_path) + [p for p in LOGS if "crashed" in p or "healthy-seed1" in p]
    for path in paths:
        for chunk in (whole_file.BULK_CHUNK, 2048):
            monkeypatch.setattr(whole_file, "BULK_CHUNK", chunk)
            rounds.clear()
            one = _judged(path, True, False, monkeypatch)
            assert chunk > 2048 or 1 in rounds, path  # (a small file's one block ends its job)
            monkeypatch.setattr(pipeline_core, "_ends_run", lambda items: True)  # a round per rollout
            rounds.clear()
            each = _judged(path, True, False, monkeypatch)
            assert chunk == 2048 or max(rounds) > 1
            monkeypatch.undo()
            count(monkeypatch)
            assert one == each, (path, chunk)
    items = LineParser().feed_lines(["Job 'raysubmit_1' succeeded"])
    assert pipeline_core._ends_run(items) and not pipeline_core._ends_run([])


@pytest.mark.skipif(native.SCAN is None, reason="the pipeline runs the pure path")
def test_feed_file_agrees_packed_and_live_feeds_make_dicts(tmp_path, monkeypatch):
    path = tmp_path / "run.log"
    lines = [ln for _, ln in generate("healthy", 30, 1, noise_per_rollout=20)]
    path.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    states = []
    for pack in (True, False):
        monkeypatch.setattr(whole_file, "PACK_RECORDS", pack)
        pipe = pipeline.Pipeline()
        assert pipeline.feed_file(pipe, str(path), chunk=4096)
        assert pipe.parser.packed is False
        states.append(store_state(pipe.store))
        # the live feed that follows: records with dicts, as views read them
        up = pipe.feed("\n".join(lines[len(lines) // 2 :]).encode())
        assert up.records and all(type(r.metrics) is dict for r in up.records)
        states.append(store_state(pipe.store))
    assert states[0] == states[2] and states[1] == states[3]
