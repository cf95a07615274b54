"""The optional C scanner (grpo_tui/lines/_scan.c) changes nothing but speed.

(Tests of the C code are named test_scanner_* or *fuzzed*: CI runs those again against a
scanner built with ASan/UBSan.)

LineParser.feed_lines with the scanner and without it (the pure-Python inline path) must give
identical items (every dataclass field), counts, first/last times and skipped-line bookkeeping,
whatever the input and however it is cut into batches.  The scanner module is imported
directly, so these run under GRPO_TUI_PURE=1 too; they skip only when it was not built.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib
import math
import os
import random
import re
import struct
from collections import deque

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grpo_tui.lines.files import CHUNK, read_blocks
from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.patterns import _CONTROL_NO_ESC, _source_key, is_candidate
from grpo_tui.lines.records import STORE_EVENT_KINDS, Event
from grpo_tui.lines.values import parse_dict
from grpo_tui.simulate import SCENARIOS, generate

try:
    if os.environ.get("GRPO_TUI_SCAN_SO"):  # CI: a build with -fsanitize=address,undefined
        import importlib.util

        _spec = importlib.util.spec_from_file_location("grpo_tui.lines._scan", os.environ["GRPO_TUI_SCAN_SO"])
        _scan = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_scan)
    else:
        _scan = importlib.import_module("grpo_tui.lines._scan")
except ImportError:
    _scan = None
# the sanitized run checks the C: a test's pure-Python side ran in CI's stage 1 already
_SANITIZED = bool(os.environ.get("GRPO_TUI_SCAN_SO"))
if _scan is not None:  # what export.py does for its module (a sanitized build is another one)
    from grpo_tui.export import _float_tables

    _scan.float_tables(*_float_tables())

# accel: these compare the built C scanner with the pure path inside one process, whatever
# GRPO_TUI_PURE says, so CI's pure-path pass deselects them (-m "not accel": an exact repeat).
pytestmark = [
    pytest.mark.accel,
    pytest.mark.skipif(
        _scan is None, reason="grpo_tui.lines._scan is not built (no C compiler at install): pure path only"
    ),
]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LOGS = sorted(
    glob.glob(os.path.join(ROOT, "sample_logs", "*.log")) + glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.log"))
)
# the other formats (#41): metrics.jsonl, verl's file logger, ms-swift, prime-rl, pasted tables
OTHER_LOGS = sorted(
    glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.jsonl"))
    + glob.glob(os.path.join(ROOT, "tests", "fixtures", "real", "*", "*.*"))
)
FUZZ = settings(
    max_examples=int(os.environ.get("GRPO_TUI_SCAN_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def iter_line_blocks(path: str, chunk: int = CHUNK):
    """read_blocks' blocks as lists of decoded lines (the parser's str feed)."""
    for block, _ in read_blocks(path, chunk):
        yield str(block, "utf-8", "replace").split("\n")


def _parse(batches, accel: bool, lean: bool = False) -> LineParser:
    p = LineParser(accel=accel)
    p.noise_times, p.store_events_only = not lean, lean  # (judge_path(rows_only=True): export's read)
    if accel:
        p._scan = _scan  # the built module, whatever GRPO_TUI_PURE says
        p._ready_run = True
    p.items = []
    for lines in batches:
        p.items.extend(p.feed_lines(list(lines)))
    p.items.extend(p.flush())
    return p


def _state(p: LineParser):
    return (
        repr([(type(x).__name__, dataclasses.asdict(x)) for x in p.items]),  # repr: nan == nan
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
    )


def assert_same(batches, lean: bool = False) -> LineParser:
    """The scanner's parse is the pure one, with the metric dicts read by the parsing thread
    (the default) and by the reader thread's walk (_scan.set_pairs_ahead); `lean`: both reading
    as export does (no noise line's time, no event but STORE_EVENT_KINDS: LineParser's
    noise_times and store_events_only), which changes nothing else (_rows_view: the same records,
    store events and counts as the full read's)."""
    batches = [list(b) for b in batches]
    fast, pure = _parse(batches, True, lean), _parse(batches, False, lean)
    assert _state(fast) == _state(pure)
    was = _scan.set_pairs_ahead(True)
    try:
        ahead = _parse(batches, True, lean)
    finally:
        _scan.set_pairs_ahead(was)
    assert _state(ahead) == _state(pure)
    if lean:
        assert _rows_view(fast) == _rows_view(_parse(batches, False))
    return fast


def _rows_view(p: LineParser):
    """What export's rows are made of: every record and every event the store's rows depend on,
    without their times (and time texts); and the counts."""
    items = []
    for x in p.items:
        if isinstance(x, Event) and x.kind not in STORE_EVENT_KINDS:
            continue
        d = dataclasses.asdict(x)
        d.pop("time")
        d.pop("ts")
        items.append((type(x).__name__, d))
    return repr(items), p.counts.as_dict()


def _cut(lines: list[str], sizes) -> list[list[str]]:
    out, i = [], 0
    sizes = list(sizes) or [len(lines) or 1]
    k = 0
    while i < len(lines):
        n = max(1, sizes[k % len(sizes)])
        out.append(lines[i : i + n])
        i += n
        k += 1
    return out


# -- real and simulated logs -----------------------------------------------------------------


@pytest.mark.parametrize("path", LOGS + OTHER_LOGS, ids=os.path.basename)
@pytest.mark.parametrize("chunk", [4 << 20, 4096, 333])
def test_logs_agree(path, chunk):
    p = assert_same(iter_line_blocks(path, chunk))
    assert p.counts.lines > 0


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
@pytest.mark.parametrize("chunk", [4 << 20, 333])
def test_logs_agree_read_for_export(path, chunk):
    assert_same(iter_line_blocks(path, chunk), lean=True)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_simulated_runs_agree(scenario):
    lines = [ln for _, ln in generate(scenario, 24, 3, noise_per_rollout=60)]
    assert_same([lines])
    assert_same(_cut(lines, [1, 7, 50, 300]))
    assert_same(_cut(lines, [1, 7, 50, 300]), lean=True)


# Noise lines with anchors in them (no record, no event): SGLang's, Miles logger's and
# header-less ones, put in place of SGLang decode lines (benchmarks/make_big_log.py: anchored).
_ANCHORED_NOISE = [
    "{p}[{t}] Decode batch (global step: {i}), #running-req: 3",
    "{p}[{t}] Prefill batch. {{'bs': {i}}}",
    "{p}[{t}] Cache stats: {{'hit_rate': 0.{i}}}",
    "{p}[{t}] Loading checkpoint shards ... {i}/4",
    "{p}[{t} TP0] draft tokens left {i}",
    "{p}[{t}]wandb: step: {i} ...",
    "{p}[{t} rollout_manager] model.py:635 - Loading checkpoint shards ... {i}",
    "{p}[{t} rollout_manager] sync.py:88 - wandb sync pending, step: {i}",
    "{p}[{t} rollout_manager] engine.py:41 - Error budget ok: {{'errors': 0, 'step': {i}}}",
    "{p}Loading checkpoint shards: 100%|##########| 4/4 [00:0{i}<00:00, 1.2it/s]",
    "{p}[{t}] Decode batch: {{'bs': 2}} [repeated 3x across cluster]",
]
_SGLANG_DECODE = re.compile(r"^((?:\x1b\[36m)?\([^)]*\)(?:\x1b\[0m)? )?\[([^\]]+)\] Decode batch")


@pytest.mark.parametrize("scenario", ["healthy", "length-hacking", "crashed"])
def test_simulated_runs_with_anchored_noise_agree(scenario):
    """A run whose noise names what the parser looks for (the scanner folds most such lines,
    _scan.c: sglang_head, may_be_event): the same items, counts and books on both paths."""
    lines, k = [], 0
    for _, ln in generate(scenario, 24, 5, noise_per_rollout=60):
        m = _SGLANG_DECODE.match(ln)
        if m is not None and k % 2 == 0:
            ln = _ANCHORED_NOISE[(k // 2) % len(_ANCHORED_NOISE)].format(p=m.group(1) or "", t=m.group(2), i=k % 10)
        k += m is not None
        lines.append(ln)
    assert k > 100
    p = assert_same([lines])
    assert p.counts.noise > 0
    assert_same(_cut(lines, [1, 7, 50, 300]))
    assert_same(_cut(lines, [3, 120]), lean=True)


def test_simulated_formats_agree():
    for fmt in ("slime", "level"):
        lines = [ln for _, ln in generate("healthy", 12, 1, fmt=fmt, noise_per_rollout=40)]
        assert_same(_cut(lines, [13, 200]))


# -- the skipped-line bookkeeping: many sources, long runs, pasted prefixes -------------------


def _noise(i: int, src: str) -> str:
    return f"{src}[2026-08-21 10:{i // 60 % 60:02d}:{i % 60:02d}] Decode batch, #running-req: {i}"


def test_long_runs_over_many_sources_agree():
    rng = random.Random(5)
    heads = (
        [f"\x1b[36m(SGLangEngine pid={p})\x1b[0m " for p in range(90)]  # past the 64 keys tracked
        + [
            "(A pid=1) ",
            "",
            "> (A pid=1) ",
            "    (A pid=1) ",
            "12:(A pid=1) ",
            "\u0661 x ",
            "(" + "x" * 300 + ") ",
            "(\u00e9\u00e9 pid=2) ",
            "\u2588 ",
        ]
    )
    lines = ["[2026-08-21 10:00:00.000 main] log_utils.py:1 - start"]
    for i in range(6000):
        if i % 997 == 0:
            lines.append("retrying... (attempt 1/60)")  # header-less: catches up on skipped times
        if i % 1500 == 0:
            lines.append(f"rollout {i}: {{'rollout/raw_reward': 0.5}}")
        lines.append(_noise(i, rng.choice(heads[:3]) if i % 3 else rng.choice(heads)))
    assert_same([lines])
    assert_same(_cut(lines, [17, 1000, 2]))


def test_sources_sharing_a_pid_agree():
    """Keys that differ (actor, colours, an ip) but name the same pid share its time (_last_time
    by pid): the newest set wins, whichever key set it.  Fold.run finds a key's kept-back time by
    the key's id first (pend_set), so this is the case where the id and the pid part ways."""
    rng = random.Random(11)
    heads = [
        "\x1b[36m(SGLangEngine pid=7)\x1b[0m ",
        "\x1b[33m(SGLangEngine pid=7)\x1b[0m ",
        "(RolloutManager pid=7) ",
        "(RolloutManager pid=7, ip=10.0.0.1) ",
        "(A pid=8) ",
        "",
    ]
    lines = []
    for i in range(4000):
        sec = rng.randrange(3600)  # times out of order: the last one set wins, not the largest
        head = rng.choice(heads)
        lines.append(f"{head}[2026-08-21 10:{sec // 60:02d}:{sec % 60:02d}] Decode batch, #running-req: {i}")
        if i % 37 == 0:  # header-less: its record takes its pid's newest time
            lines.append(f"{rng.choice(heads)}rollout {i}: {{'rollout/raw_reward': 0.5}}")
        if i % 101 == 0:
            lines.append(f"{rng.choice(heads)}[2026-08-21 11:00:{i % 60:02d}.000 x] y.py:1 - step {i}: {{'a': 1}}")
    assert_same([lines])
    assert_same(_cut(lines, [13, 700, 3]))
    assert_same(_cut(lines, [50]), lean=True)


def test_more_sources_than_the_scanner_tracks_agree():
    """Past the distinct keys the scanner names in one buffer (_scan.c MAX_KEYS), their lines are
    all kept: still the same results, in one block and cut in many."""
    rng = random.Random(7)
    heads = [f"\x1b[36m(SGLangEngine pid={p})\x1b[0m " for p in range(400)] + ["(A pid=1) ", ""]
    lines = ["[2026-08-21 10:00:00.000 main] log_utils.py:1 - start"]
    for i in range(5000):
        if i % 701 == 0:
            lines.append("retrying... (attempt 1/60)")
        if i % 900 == 0:
            lines.append(f"(A pid=1) [2026-08-21 10:00:00.000 a] l.py:2 - rollout {i}: {{'rollout/raw_reward': 0.5}}")
        lines.append(_noise(i, rng.choice(heads)))
    assert_same([lines])
    assert_same(_cut(lines, [3000, 7]))


# -- hypothesis: line mixes --------------------------------------------------------------------

try:
    from tests.unit.lines.test_parse_fuzz import LINE, hostile_line
except ImportError:  # run from another directory
    LINE = st.text(max_size=120)
    hostile_line = None

SAMPLE = [ln for path in LOGS[:3] for ln in open(path, encoding="utf-8", errors="replace").read().split("\n")]
# the other formats' lines (formats.py), and near misses of each
STYLES = [ln for path in OTHER_LOGS for ln in open(path, encoding="utf-8").read().split("\n")[:6]] + [
    '{"step":3,"data":{"critic/score/mean":null,"actor/grad_norm":NaN}}',
    '{"ts":1.5,"step_key":"train/step","step":2,"metrics":{"train/grad_norm":0.5,"train/step":2}}',
    '[INFO:swift] {"loss": 0.1, "reward": 0.5, "global_step/max_steps": "3/9"}',
    '{"loss": 0.1, "reward": 0.5, "global_step/max_steps": "x/9"}',
    "{'loss': 0.1, 'reward': 0.5, 'global_step/max_steps': '4/9'}",
    "10:00:33 SUCCESS Step 9 | Time: 4.29s | Loss: 0.0000 | Entropy: 0.3571 | Mismatch KL: 0.0007 | Grad. Norm: nan",
    "10:00:34 SUCCESS [orchestrator] Step 9 |  1m 3s | Reward 0.1234 | Trainable 3/4 (75.0%) | Truncation 1.2%",
    "10:00:35   DEBUG Micro Step 1/4 | Loss 0.1 | Entropy 0.2",
    "Validation | Step 5 | Loss 0.1",
    "Step | Training Loss | reward | kl",
    "| Step | Training Loss | reward |",
    "|---|:--:|---|",
    "-- | -- | -- | --",
    "7 | 0.1 | 0.5 | nan",
    "| 8 | 0.1 | 0.5 |",
    "Step\tTraining Loss\treward",
    "9\t0.2\t0.7",
    "12 |",
    "Step|x",
    "100%|##########| 30/30",
]
MIX = st.one_of(
    LINE,
    st.sampled_from(SAMPLE),
    st.sampled_from(STYLES),
    st.builds(
        lambda p, ln: p + ln, st.sampled_from(["", "(A pid=1) ", "> ", "7:", "  ", "|", " "]), st.sampled_from(STYLES)
    ),
    st.builds(
        _noise,
        st.integers(0, 10_000),
        st.sampled_from(["", "(A pid=1) ", "\x1b[36m(B pid=2)\x1b[0m ", "> ", "7:", "  "]),
    ),
    *([hostile_line()] if hostile_line else []),
)


@FUZZ
@given(st.lists(MIX, max_size=40), st.lists(st.integers(1, 12), max_size=4), st.booleans(), st.booleans())
def test_fuzzed_line_mixes_agree(lines, sizes, keep_newlines, lean):
    if not keep_newlines:
        lines = [ln.replace("\n", " ") for ln in lines]  # else: a line holding '\n' takes the pure path
    assert_same([lines], lean)
    assert_same(_cut(lines, sizes), lean)


# -- the scanner itself ------------------------------------------------------------------------


def _inline_skips(raw: str) -> bool:
    """What feed_lines' inline path skips (given no open record and a known first time)."""
    return (
        len(raw) <= 1 << 20
        and not is_candidate(raw)
        and "\x00" not in raw
        and "\ufffd" not in raw
        and not raw.endswith("\r")
        and not _CONTROL_NO_ESC.search(raw)
    )


@FUZZ
@given(st.lists(st.one_of(MIX, st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace"))), max_size=30))
def test_scanner_never_skips_a_candidate(lines):
    lines = [ln.replace("\n", " ") for ln in lines]
    n, cands, keep, starts, heads, lasts = _scan.scan("\n".join(lines).encode("utf-8", "surrogatepass"))
    assert n == max(1, len(lines))
    assert len(heads) == len(cands) and len(lasts) == len(cands) + 1
    for k, end in enumerate(cands + [n]):  # lasts: the newest stamped noise line of each run
        start = cands[k - 1] + 1 if k else 0
        stamped = [i for i in range(start, end) if "[" in (lines or [""])[i][:64]]
        assert lasts[k] == (stamped[-1] if stamped else -1)
    cs = set(cands)
    for i, ln in enumerate(lines):
        if i not in cs:
            assert _inline_skips(ln), ln
    assert set(keep).isdisjoint(cs) and keep == sorted(keep) and cands == sorted(cands)
    for i in keep:
        assert "[" in lines[i][:64]


@FUZZ
@given(st.binary(max_size=300))
def test_scanner_on_raw_bytes_splits_like_bytes_split(data):
    n, cands, keep, *_ = _scan.scan(data)
    parts = data.split(b"\n")
    assert n == len(parts)
    assert all(0 <= i < n for i in cands + keep)
    for i, b in enumerate(parts):
        text = b.decode("utf-8", "replace")
        if i not in cands:
            assert _inline_skips(text) and text.encode() == b, b


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"\n\n",
        b"\x00",
        b"no newline at all",
        b"[x] ends mid-line",
        b"Erro",
        b": ",
        b"{",
        b"\xe2\x96",
        b"\xf0\x9f\x98",
        b"a\n\xff",
        b"x\r",
        b"\r",
        b"(" * 500,
        b"(A pid=1" + b"x" * 300,
        b"\x1b[36m(A pid=1)\x1b[0m [",
        b"[" * 70,
        b"a" * 63 + b"[",
        b"a" * 64 + b"[",
        b"\xc3\xa9" * 63 + b"[",
        b"\xc3\xa9" * 64 + b"[",
        b"\xef\xbf\xbd",
        b"\xed\xa0\x80",
        b"\xc0\x80",
        b"\xf4\x90\x80\x80",
        b"x" * ((1 << 20) + 1),
    ],
)
def test_scanner_edges(data):
    """Buffers ending mid-line, mid-character or mid-anchor, empty, NULs: bounded, and right."""
    # a bytes slice of a larger buffer: the scanner must not read past the slice it is given
    big = data + b"Error: {'a': 1}\n" * 4
    view = memoryview(big)[: len(data)]
    assert _scan.scan(view) == _scan.scan(bytes(data))
    n, cands, keep, *_ = _scan.scan(data)
    parts = data.split(b"\n")
    assert n == len(parts)
    for i, b in enumerate(parts):
        text = b.decode("utf-8", "replace")
        assert (i in cands) != (_inline_skips(text) and text.encode() == b)
        assert (i in keep) == (i not in cands and "[" in text[:64])  # one line per run: always kept


def test_scanner_rejects_non_buffers():
    with pytest.raises(TypeError):
        _scan.scan("text")
    with pytest.raises(TypeError):
        _scan.scan(None)


# -- plain candidates: the ones that end only their own source's window of skipped lines ---------

_PREFIXES = [
    "",
    "\x1b[36m(A pid=1)\x1b[0m ",
    "(A pid=1) ",
    "(pid=7) ",
    "\x1b[36m(B pid=2, ip=1.2.3.4)\x1b[0m ",
    "(A  pid=1) ",
    "(A pid=1)  ",
    "\x1b[36m(A pid=1)\x1b[0m\t",
    "(A b pid=1) ",
]
_HEADERS = [
    "[2026-08-21 10:00:00.000 main] x.py:1 - ",
    "[2026-08-21 10:00:00] ",
    "[2026-08-21 10:00:00 (Ray deduplicates logs by default.] Error ",
    "[2026-08-21 10:00:00 [repeated 2x across cluster]] Error ",
    "[2026-08-21 10:00:00\x1b[0m.000 m] x.py:1 - ",
    "\x1b[1m[2026-08-21 10:00:00.000 main] x.py:1 - ",
    "[2026-08-21 10:00:00.000 " + "p" * 50 + "] x.py:1 - ",
    "[2026-08-21 10:00:0] x.py:1 - ",
    "2026-08-21 10:00:00,000\tINFO ",
    "",
    "[2026-08-21 10:00:00\r.000 main] x.py:1 - ",
]
_MESSAGES = [
    "rollout 3: {'a': 1, 'b': -2.5e-3}",
    "rollout 3: {'a': 1, 'b': 2",
    "step 4: {'a': np.float64(1.0)}",
    "step 4: {'a': nan, 'b': inf}",
    "perf 5: {'a': 1}  ",
    "perf 5: {'a': {'b': 1}}",
    "perf 5: {}",
    "eval 6: {'a': '}'}",
    "rollout 3: ... 'a': 1,",
    "rollout 3: \u2026 'a': 1",
    "critic-step 2: {'a': 1}",
    "Memory: {'gpu': '0', 'x': 1.5}",
    "x {y} rollout 3: {'a': 1",
    "ft op=train phase=start rollout=1 attempt=1",
    "Traceback (most recent call last):",
    "Error: boom",
    "rollout 3: {'a': 1} [repeated 2x across cluster]",
    "rollout 3: {'a': 1e}",
    "rollout 3: {'a': .5, 'b': 5., 'c': -inf}",
    "step 1: {'a\\'b': 1}",
    # _peel takes ANSI and control bytes out: what they hide must not pass for plain
    "Error Trace\x1b[0mback (most recent call last):",
    "Error Trace\x7fback (most recent call last):",
    "Error Trace\x01back (most recent call last):",
    "rollout 3: \x1b[0m{'a': 1",
    "rollout 3:\x7f {'a': 1",
    "ft x\x1b[31m Traceback (most recent call last):",
    "Error rollout 3: .\x1b[0m.. 'a': 1,",
    "Error x (Ray deduplicates logs by default. y)",
    "Memory: {'gpu': '7', 'x': 3.1}\x1b[32m [repeated 7x across cluster] (Ray deduplicates logs by default. "
    "Set RAY_DEDUP_LOGS=0 to disable.)\x1b[0m",
    "ft op=x\x1b[32m [repeated 2x across cluster]\x1b[0m",
    "rollout 3: {'a': 1}\x1b[32m [repeated 2x across cluster]\x1b[0m",
    "Error \x1b]0;title\x07 x",
    "Error \x1b[?25l x",
    "Error Trace\x1b[1;31mback (most recent call last)",
    "Error x\x1b[0m\x1b[0m",
    "rollout 3: {'a': 1, \x1b[0m'b': 2}",
    "rollout 3: \x1b[0m{'a': 1}",
    "Error x\x1b[",
]


@pytest.mark.parametrize("header", _HEADERS)
def test_scanner_plain_candidates_read_only_their_own_source(header):
    """A line the scanner takes as plain must, fed with nothing open, leave nothing open and
    pop no source's skipped lines but its own (else the keep selection would drop lines a later
    read shows).  Every prefix and message with this header (one test, not 3,762: the items'
    own cost was most of the time, and under ASan in CI)."""
    wrong = []
    for prefix in _PREFIXES:
        for msg in _MESSAGES:
            line = prefix + header + msg
            if _scan.plain(line.encode()):
                why = _plain_line_leaves_others_alone(line)
                if why:
                    wrong.append(f"{why}: {line!r}")
    assert not wrong, "\n".join(wrong)


def _plain_line_leaves_others_alone(line: str) -> str:
    """Why a plain candidate fed with nothing open breaks the books ("" when it does not)."""
    p = LineParser()
    p.feed("[2026-08-21 09:00:00.000 main] x.py:1 - start")
    for src in ("", "(A pid=1) ", "\x1b[36m(A pid=1)\x1b[0m ", "(Z pid=9) "):
        p.feed_lines([f"{src}[2026-08-21 09:00:01.000 z] y.py:2 - noise"])
    key = _source_key(line)
    p._remember_skipped(line)  # its own key has skipped lines too
    before = {k: list(v) for k, v in p._skipped.items()}
    p.feed(line)
    if p._pending is not None:
        return "left a record open"
    after = {k: list(v) for k, v in p._skipped.items()}
    if key not in before or key in after:
        return "did not pop its own skipped lines"  # select_kept keeps none of its lines
    before.pop(key, None)
    if after != before:
        return "popped another source's skipped lines"
    return ""


def test_scanner_plain_candidates_are_found_on_the_common_lines():
    for line in [
        "\x1b[36m(A pid=1)\x1b[0m [2026-08-21 10:00:00.000 main] x.py:1 - rollout 3: {'a': 1, 'b': -2.5e-3}",
        "[2026-08-21 10:00:00.000 main] group.py:147 - ft op=train phase=start rollout=0 attempt=0",
        "[2026-08-21 10:00:00.000 main] m.py:41 - Memory-Usage: {'gpu': '0', 'total_GB': 79.19}",
    ]:
        assert _scan.plain(line.encode()), line
    for line in [
        "rollout 3: {'a': 1}",
        "[2026-08-21 10:00:00.000 main] x.py:1 - rollout 3: {'a': 1",
        "[2026-08-21 10:00:00.000 main] x.py:1 - Traceback (most recent call last):",
    ]:
        assert not _scan.plain(line.encode()), line


@pytest.mark.parametrize("seed", range(6))
def test_scanner_windows_between_plain_candidates_agree(seed):
    """Many sources, long runs, plain candidates of some sources and not others, pending records
    opened mid-run, in batches cut anywhere: the kept lines show the same deques."""
    rng = random.Random(seed)
    heads = [f"\x1b[36m(SGLangEngine pid={p})\x1b[0m " for p in range(rng.choice([3, 20, 70]))] + ["", "(A pid=1) "]
    cands = [
        "[2026-08-21 10:00:00.000 main] g.py:1 - ft op=train phase=start rollout=1 attempt=0",
        "(A pid=1) [2026-08-21 10:00:01.000 a] l.py:2 - step {n}: {{'train/grad_norm': 0.5}}",
        "\x1b[36m(SGLangEngine pid=1)\x1b[0m [2026-08-21 10:00:02.000 s] m.py:3 - Memory: {{'gpu': '0'}}",
        "(A pid=1) [2026-08-21 10:00:01.000 a] l.py:2 - rollout {n}: {{'rollout/raw_reward': 0.5,",
        "retrying... (attempt 1/60)",
        "(A pid=1) Traceback (most recent call last):",
        "\x1b[36m(SGLangEngine pid=0)\x1b[0m [2026-08-21 10:00:03.000 s] m.py:3 - Error: x",
    ]
    lines = ["[2026-08-21 09:00:00.000 main] log_utils.py:1 - start"]
    for i in range(4000):
        if rng.random() < 0.03:
            lines.append(rng.choice(cands).format(n=i))
        lines.append(_noise(i, rng.choice(heads)) if rng.random() < 0.9 else "   " + str(i))
    assert_same([lines])
    assert_same(_cut(lines, [rng.randint(1, 600) for _ in range(5)]))
    blocks = _cut(lines, [rng.randint(1, 600) for _ in range(5)])
    for lean in (False, True):
        fast, pure = _parse_blocks(blocks, True, lean), _parse_blocks(blocks, False, lean)
        assert _state(fast) == _state(pure)
    assert_same(blocks, lean=True)


def _parse_blocks(batches, accel: bool, lean: bool = False) -> LineParser:
    """Through feed_block: the bytes path the pipeline takes."""
    p = LineParser(accel=accel)
    p.noise_times, p.store_events_only = not lean, lean
    if accel:
        p._scan = _scan
        p._ready_run = True
    p.items = []
    for lines in batches:
        p.items.extend(p.feed_block("\n".join(lines).encode("utf-8", "surrogatepass")))
    p.items.extend(p.flush())
    return p


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_scanner_byte_blocks_agree_with_lines(path):
    """feed_block (bytes, both paths) gives what feed_lines gives on the decoded lines."""
    with open(path, "rb") as f:
        data = f.read()
    blocks = [data[i : i + 5000] for i in range(0, len(data), 5000)]
    rest = b""
    cut_blocks = []
    for b in blocks:
        b = rest + b
        k = b.rfind(b"\n")
        if k < 0:
            rest = b
            continue
        cut_blocks.append(b[:k])
        rest = b[k + 1 :]
    if rest:
        cut_blocks.append(rest)
    ref = _parse([b.decode("utf-8", "replace").split("\n") for b in cut_blocks], False)
    for accel in (True, False):
        p = LineParser(accel=accel)
        if accel:
            p._scan = _scan
            p._ready_run = True
        p.items = []
        for b in cut_blocks:
            p.items.extend(p.feed_block(b))
        p.items.extend(p.flush())
        assert _state(p) == _state(ref)


# -- read_dict: the common metric dict read in C, or None (the Python reader reads it) -----------


def _same_values(text: str) -> None:
    got = _scan.read_dict(text)
    if got is None:
        return
    ref = parse_dict(text)
    assert ref.complete and not ref.error and not ref.abridged and not ref.raw_nonfinite, text
    assert list(got.items()) == list(ref.values.items()), text
    assert [type(v) for v in got.values()] == [type(v) for v in ref.values.values()], text
    assert repr(got) == repr(ref.values), text  # -0.0 is not 0.0


_NUM = st.one_of(
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"-?(?:\d{0,25}\.?\d{0,25}(?:[eE][-+]?\d{0,4})?|nan|inf)", fullmatch=True),
    st.sampled_from(
        [
            "1e999",
            "-1e999",
            "1e-999",
            "0",
            "-0",
            "007",
            "5.",
            ".5",
            "1e",
            "1e+",
            "--1",
            "\uff11",
            "np.float64(1.0)",
            "'x'",
            "True",
            "None",
            "[1, 2]",
        ]
    ),
)
_KEY = st.one_of(
    st.sampled_from(["train/loss", "rollout/raw_reward", "a", "", "\u00e9", "a\\'b", "x'y", "{"]), st.text(max_size=8)
)


@FUZZ
@given(
    st.lists(st.tuples(_KEY, _NUM), max_size=8),
    st.sampled_from(["", " ", "  \t", "\u3000", " x", ",", "}"]),
    st.sampled_from([", ", ",", ",  "]),
)
def test_scanner_read_dict_agrees_with_parse_dict(pairs, end, sep):
    text = "{" + sep.join(f"'{k}': {v}" for k, v in pairs) + "}" + end
    _same_values(text)
    _same_values(text[:-1] if text else text)


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "{'a': 1}",
        "{'a': 1, 'a': 2.5}",
        "{'a': -0, 'b': 007, 'c': 123456789012345678}",
        "{'a': 1234567890123456789}",
        "{'a': 1e308, 'b': 1e309, 'c': 2.2250738585072014e-308, 'd': 5e-324}",
        "{'a': 0.1, 'b': 0.30000000000000004, 'c': 1.7976931348623157e+308}",
        "{'\u00e9\u4e2d': 1}",
        "{'a': 1}\x00",
        "{'a': 1",
        "{'a': 1,}",
        "{'a':1}",
        "{ 'a': 1}",
        "{'a': " + "9" * 400 + "}",
        "{'a': " + "9" * 60 + ".5}",
        "{'a': \ud800}",
        "{'\ud800': 1}",
    ],
)
def test_scanner_read_dict_edges(text):
    _same_values(text)
    assert _scan.read_dict(text) is not None or text not in ("{}", "{'a': 1}")


# read_dict's numbers without strtod (quick_double: M * 10**k with one IEEE operation, or the
# exact 128-bit quotient) must be float()'s to the last bit: decimal strings around every edge.
_DIGITS = st.text("0123456789", min_size=1, max_size=22)


@st.composite
def _decimals(draw):
    digits = draw(
        st.one_of(
            _DIGITS,
            st.sampled_from(
                [str(2**53 + d) for d in range(-3, 4)]
                + [str(10**17 + d) for d in range(-3, 4)]
                + [str(2**64 - 1), str(10**19 - 1), "1" + "0" * 18]
            ),
        )
    )
    cut = draw(st.integers(0, len(digits)))
    text = digits[:cut] + ("." + digits[cut:] if cut < len(digits) else "")
    if draw(st.booleans()):
        text = "0." + "0" * draw(st.integers(0, 12)) + digits
    if draw(st.booleans()):
        text += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "-", "+"])) + str(draw(st.integers(0, 40)))
    return draw(st.sampled_from(["", "-"])) + text


@FUZZ
@given(
    st.lists(
        st.one_of(
            _decimals(), st.floats(allow_nan=False, allow_infinity=False).map(repr), st.floats(-1e-5, 1e-5).map(repr)
        ),
        min_size=1,
        max_size=12,
    )
)
def test_scanner_read_dict_numbers_are_floats_to_the_bit(tokens):
    _same_values("{" + ", ".join(f"'k{i}': {t}" for i, t in enumerate(tokens)) + "}")


@FUZZ
@given(
    st.lists(
        st.lists(st.sampled_from([f"m{i}/x" for i in range(3000)] + ["a", "\u00e9", "x" * 200]), max_size=20),
        max_size=20,
    )
)
def test_scanner_read_dict_keys_stay_right_across_calls(dicts):
    """The table of keys seen before (dict_key) hands back the same text, whatever collides."""
    for keys in dicts:
        _same_values("{" + ", ".join(f"'{k}': {i}" for i, k in enumerate(keys)) + "}")


def test_scanner_read_dict_rejects_non_str():
    with pytest.raises(TypeError):
        _scan.read_dict(b"{'a': 1}")


# -- heads: candidates whose Miles header the scanner reads (LineParser._feed_head) --------------

_H_PREFIX = st.sampled_from(
    [
        "",
        "\x1b[36m(A pid=1)\x1b[0m ",
        "(MegatronTrainRayActor pid=48479) ",
        "(pid=7) ",
        "\x1b[36m(B pid=2, ip=1.2.3.4)\x1b[0m ",
        "(A pid=1)",
        "(A pid=1)  ",
        "\x1b[1;36m(A pid=x)\x1b[m ",
        "(A.b-c pid=1) ",
        "(\u00e9 pid=1) ",
        "> ",
        "  ",
        "12:",
        "(A pid=1, ip=10.0.0.6) ",
        "\x1b[36m(A pid=1, ip=10.0.0.6)\x1b[0m ",
        "(pid=1, ip=2) ",
        "(A pid=1, node=2) ",
        "(A pid=1,ip=2) ",
        "(A pid=1, ip=) ",
        "(A pid=1, ip=a b) ",
        "(A pid=1, ip=a, ip=b) ",
        "(A pid=, ip=2) ",
    ]
)
_H_DATE = st.sampled_from(
    [
        "2026-08-21 10:00:00",
        "2026-13-45 25:61:61",
        "0000-00-00 00:00:00",
        "2026-08-21 10:00:0",
        "\u0662026-08-21 10:00:00",
    ]
)
_H_MS = st.sampled_from(["", ".123", ",123", ".12", ".1234", ".000", ". 12"])
_H_PROC = st.sampled_from(
    [
        "",
        " main",
        "main",
        " actor_cell0_rank0",
        " rollout_manager",
        " 9x",
        " a.b-c",
        " a\u00e9",
        "  main",
        " main ",
        " main\t",
        " -x",
        " _x",
    ]
)
_H_LEVEL = st.sampled_from(["", "INFO ", "WARNING ", "WARN ", "WARNINGX ", "ERROR ", "info ", "CRITICAL  "])
_H_FILE = st.sampled_from(
    [
        "log_utils.py:542 - ",
        "a.py:1 - ",
        ".py:1 - ",
        "x.pyc:1 - ",
        "a.py.py:3 - ",
        "a-b.c.py:0 - ",
        "a.py:1 -",
        "a.py:x - ",
        "\u00e9.py:1 - ",
        "a.py:\u0661 - ",
        "a b.py:1 - ",
    ]
)
_H_MSG = st.one_of(
    st.sampled_from(
        _MESSAGES
        + [
            "x",
            "",
            "Error: \x1b[31mred\x1b[0m",
            "a\tb Error",
            "ft op=train\r",
            "Error \ufffd\ufffd\ufffd\ufffd\ufffd",
            "Error x [repeated 3x across cluster]",
            "Error (Ray deduplicates logs by default. x)",
            "Error \x7f",
            "Error \x00",
            "ft op=update_weights phase=end rollout=3 ok=true elapsed_s=1.5",
        ]
    ),
    st.text(max_size=30).map(lambda t: "Error " + t),
)


def _mostly(good: list[str], strat) -> st.SearchStrategy:
    """Mostly well-formed parts (so most lines take the head path), sometimes any."""
    return st.one_of(st.sampled_from(good), st.sampled_from(good), strat)


@st.composite
def _head_lines(draw):
    return (
        draw(_mostly(["", "\x1b[36m(A pid=1)\x1b[0m ", "(B pid=2) "], _H_PREFIX))
        + "["
        + draw(_mostly(["2026-08-21 10:00:00"], _H_DATE))
        + draw(_mostly([".123", ""], _H_MS))
        + draw(_mostly([" main", " actor_cell0_rank0"], _H_PROC))
        + "] "
        + draw(_mostly([""], _H_LEVEL))
        + draw(_mostly(["log_utils.py:542 - "], _H_FILE))
        + draw(_H_MSG)
    )


def _mixes(*lines):
    """Batches of the given line strategies among sample and noise lines (and where to cut them)."""
    noise = st.builds(_noise, st.integers(0, 99), st.sampled_from(["", "(A pid=1) "]))
    return st.lists(st.one_of(*lines, st.sampled_from(SAMPLE), noise), max_size=30), st.lists(
        st.integers(1, 12), max_size=4
    )


def _assert_mix_same(lines, sizes) -> None:
    lines = [ln.replace("\n", " ") for ln in lines]
    assert_same([lines])
    assert_same(_cut(lines, sizes))


@FUZZ
@given(*_mixes(_head_lines(), _head_lines()))
def test_scanner_head_lines_agree(lines, sizes):
    _assert_mix_same(lines, sizes)


@FUZZ
@given(_head_lines())
def test_scanner_feed_head_is_feed(line):
    """Where the scanner hands over header fields, _feed_head does exactly what feed does."""
    line = line.replace("\n", " ")
    n, cands, keep, starts, heads, _ = _scan.scan(line.encode("utf-8", "surrogatepass"))
    if not heads or heads[0] is None:
        return
    states = []
    for fast in (True, False):
        p = LineParser()
        p.feed("[2026-08-21 09:00:00.000 main] x.py:1 - start")
        p.feed("(A pid=1) [2026-08-21 09:00:01.000 a] l.py:2 - rollout 1: {'a': 1,")  # a record open
        p.items = p._feed_head(line, heads[0]) if fast else p.feed(line)
        p.items += p.flush()
        states.append(_state(p))
    assert states[0] == states[1], line


def test_scanner_heads_are_found_on_common_lines():
    for line in [
        "\x1b[36m(A pid=1)\x1b[0m [2026-08-21 10:00:00.000 main] x.py:1 - rollout 3: {'a': 1, 'b': -2.5e-3}",
        "\x1b[36m(A pid=1, ip=10.0.0.6)\x1b[0m [2026-08-21 10:00:00.000 main] x.py:1 - rollout 3: {'a': 1}",
        "(A pid=1, ip=10.0.0.6) [2026-08-21 10:00:00] Memory: {'a': 1} step: 3",
        "[2026-08-21 10:00:00.000 main] group.py:147 - ft op=train phase=start rollout=0 attempt=0",
        "[2026-08-21 10:00:00,000] INFO a.py:1 - Error: x",
    ]:
        heads = _scan.scan(line.encode())[4]
        assert heads[0] is not None, line


# -- the whole pipeline: same verdict, alerts and export on both paths ----------------------------


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_judged_logs_agree(path, monkeypatch):
    """judge_path (byte blocks, store, rules, clocks) with the scanner and without it: the same
    report (status, signals, alerts with their evidence), state and exported rows."""
    from grpo_tui import export, pipeline
    from grpo_tui.lines import anatomy

    now = os.path.getmtime(path) + 30.0
    out = []
    for scan in (_scan, None):
        monkeypatch.setattr(anatomy, "SCAN", scan)
        pipe = pipeline.judge_path(path, now=now)
        assert (pipe.parser._scan is None) == (scan is None)
        out.append(
            (
                repr(pipe.report(now).to_json(path)),
                pipe.parser.counts.as_dict(),
                repr(export.rows(pipe.store)),
                repr(export.rows(pipe.store, "step")),
                pipe.lines_seen,
            )
        )
    assert out[0] == out[1]


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_dicts_read_by_either_thread_agree(path):
    """judge_path with the metric dicts read by the reader thread's walk or by the parsing thread
    as their records are made (_scan.c: pairs_ahead): the same report, counts and exported rows
    (the records packed or not alike)."""
    from grpo_tui import export, pipeline

    now = os.path.getmtime(path) + 30.0
    out = []
    for ahead in (False, True):
        was = _scan.set_pairs_ahead(ahead)
        try:
            pipe = pipeline.judge_path(path, now=now)
        finally:
            _scan.set_pairs_ahead(was)
        out.append(
            (
                repr(pipe.report(now).to_json(path)),
                pipe.parser.counts.as_dict(),
                repr(export.rows(pipe.store)),
                repr(export.rows(pipe.store, "step")),
            )
        )
    assert out[0] == out[1]
    assert _scan.set_pairs_ahead(False) is False


# -- the line walks (scalar, SSSE3, AVX2: _scan.kernels()) give one and the same scan() ---------

_ANCHORS = [
    ": {",
    ": \u2026",
    "Error",
    "EXEC:",
    "retrying",
    "ft ",
    "f memory",
    "Traceback",
    "Max retries",
    "OfMemory",
    "memory pressure",
    "Health check failed",
    "Recovered ",
    "Watchdog caught",
    "W&B",
    "Job '",
    "Fatal async",
    "checkpoint",
    "wandb",
    "tensorboard",
    "train.py",
    "train_async.py",
    "+ ray job submit",
    " skipped: ",
    " ...",
    ") {",
    "step:",
    "{'",
]
# pieces that meet the SIMD filter's edges: anchors and their near misses (a fingerprint without
# the rest, a cut anchor), bytes it must stop at (NUL, non-ASCII, good and bad), newlines, and
# runs that move the next piece across a 16/32-byte window
_PIECES = (
    [a.encode() for a in _ANCHORS]
    + [a.encode()[:k] for a in _ANCHORS for k in (2, 3) if len(a) > k]
    + [
        b"\n",
        b"\n",
        b"\x00",
        b"\r",
        b"\r\n",
        b"\xe2\x80\xa6",
        b"\xc3\xa9",
        b"\xef\xbf\xbd",
        b"\xff",
        b"\xe2\x80",
        b"\xed\xa0\x80",
        b"\xf0\x9f\x98\x80",
        b"[",
        b"(A pid=1) ",
        b"\x1b[36m(B pid=2)\x1b[0m ",
        b"{",
        b" {",
        b'{"',
        b"[2026-08-21 10:00:00.000 main] x.py:1 - ",
        b"tra",
        b"Tra",
        b"ste",
        b"che",
        b"mem",
        b"[2026-08-21 10:00:00 TP0] ",
        b"saving checkpoint ",
        b"CUDA out of memory",
        b"killed due to memory pressure",
        b"successfully saved checkpoint ",
        b"Saving tensorboard log to",
        b"retrying...",
        b"Max retries (",
    ]
    + [b"x" * k for k in (1, 2, 3, 5, 13, 16, 29, 30, 31, 32, 33, 34, 63, 64, 65)]
)


def _all_kernels(data) -> list:
    """scan(data) under every kernel this machine runs (the kernel in use is restored)."""
    was = _scan.kernel()
    try:
        return [(k, _scan.kernel(k) and _scan.scan(data)) for k in _scan.kernels()]
    finally:
        _scan.kernel(was)


def _kernels_agree(data) -> None:
    got = _all_kernels(data)
    for k, res in got[1:]:
        assert res == got[0][1], (k, data)
    # a view of a longer buffer: no kernel reads past the end it is given
    big = bytearray(data) + b"Error: {'a': 1}\n" * 3
    view = memoryview(big)[: len(data)]
    for k, res in _all_kernels(view):
        assert res == got[0][1], (k, "view", data)


def test_scanner_kernels_are_listed():
    assert _scan.kernels()[0] == "scalar" and _scan.kernel() in _scan.kernels()
    with pytest.raises(ValueError):
        _scan.kernel("no-such-kernel")


@FUZZ
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.binary(max_size=40)), max_size=60).map(b"".join))
def test_scanner_kernels_agree_on_fuzzed_bytes(data):
    _kernels_agree(data)


@pytest.mark.parametrize("anchor", _ANCHORS)
def test_scanner_kernels_find_every_anchor_at_every_offset(anchor):
    """Every anchor at every offset of a 32-byte window and across the next, alone, after a
    flagged near miss, cut by a newline or by the buffer's end: each kernel takes exactly the
    lines is_candidate takes."""
    a = anchor.encode()
    lines = []
    for off in range(70):
        for before, after in ((b"", b""), (b"tr", b" x"), (b"\xc3\xa9", b"y" * 40)):
            lines.append(b"x" * off + before + a + after)
        lines.append(b"x" * off + a[:-1] + b"\n" + a[-1:])
    for line in lines:
        _kernels_agree(line)
    data = b"\n".join(lines)
    _kernels_agree(data)
    n, cands, *_ = _scan.scan(data)
    parts = data.split(b"\n")
    assert [
        i
        for i in range(n)
        if not _inline_skips(parts[i].decode("utf-8", "replace"))
        or parts[i].decode("utf-8", "replace").encode() != parts[i]
    ] == cands


_EVENT_ANCHORS = [
    "retrying",
    "Traceback",
    "Max retries",
    "ft ",
    "Health check failed",
    "Recovered ",
    "out of memory",
    "OutOfMemory",
    "memory pressure",
    "Watchdog caught",
    "W&B",
    "Job '",
    "Fatal async",
    "checkpoint",
    "wandb",
    "tensorboard",
    "train.py",
    "train_async.py",
    "EXEC:",
    " skipped: ",
    " ...",
    "+ ray job submit",
]


@pytest.mark.parametrize("anchor", _EVENT_ANCHORS)
def test_scanner_kernels_find_every_event_anchor_in_a_message(anchor):
    """The event scan of a Miles message (the SIMD kernels look only where the walk's filter flags
    a fingerprint, for "out of memory" and "OutOfMemory" some bytes in) finds each event anchor
    at every offset of two 32-byte windows, whole, cut, or ending the buffer: every kernel gives
    the same heads, and the parser reads the lines as the inline path does."""
    heads = ["[2026-08-21 10:00:00.000 main] x.py:1 - ", "\x1b[36m(A pid=1)\x1b[0m [2026-08-21 10:00:00] y.py:2 - "]
    lines = []
    for off in range(70):
        for head in heads:
            lines += [
                head + "w" * off + anchor,
                head + "w" * off + anchor + " z" * 20,
                head + "w" * off + anchor[:-1] + " step: 1",
                head + "Error " + "w" * off + anchor[1:],
            ]
    for line in lines[::7] + [line for line in lines if line.endswith(anchor)]:
        _kernels_agree(line.encode())
    _kernels_agree("\n".join(lines).encode())
    assert_same([lines])


# the texts _classify acts on, which the scanner looks for to tell a noise message from an event
# (_scan.c's TRIGGERS: the SIMD kernels look only where the walk's filter flags a fingerprint,
# up to 19 bytes in), and "W&B" without the "mode enabled" it needs
_TRIGGERS = [
    "Traceback (most recent call last)",
    "retrying...",
    "Max retries (",
    " skipped: ",
    "Health check failed",
    "Recovered ",
    "CUDA out of memory",
    "CUDA error: out of memory",
    "OutOfMemoryError",
    "killed due to memory pressure",
    "Watchdog caught collective operation timeout",
    "W&B mode enabled",
    "W&B",
    "Job '",
    "Fatal async misuse",
    "saving checkpoint ",
    "successfully saved checkpoint ",
    "Saving tensorboard log to",
]


@pytest.mark.parametrize("trigger", _TRIGGERS)
def test_scanner_kernels_find_every_trigger_in_a_message(trigger):
    """Whether a message that names an anchor may be an event: each trigger at every offset of
    two 32-byte windows and in the short tail after them, whole, cut, or with its first byte
    changed, under a Miles header, SGLang's own header and none: every kernel gives the same
    heads, and the parser reads the lines as the inline path does."""
    heads = [
        "[2026-08-21 10:00:00.000 main] x.py:1 - ",
        "\x1b[36m(A pid=1)\x1b[0m [2026-08-21 10:00:00 TP0] ",
        "\x1b[36m(A pid=1)\x1b[0m ",
    ]
    lines = []
    for off in range(70):
        for head in heads:
            lines += [
                head + "w" * off + trigger,
                head + "w" * off + trigger + " step: 1",
                head + "w" * off + trigger[:-1] + " step: 1",
                head + "w" * off + "x" + trigger[1:] + " step: 1",
                head + "step: " + "w" * off + trigger + " z" * 20,
            ]
    for line in lines[::5] + [line for line in lines if line.endswith(trigger)]:
        _kernels_agree(line.encode())
    _kernels_agree("\n".join(lines).encode())
    assert_same([lines])


def test_scanner_header_bracket_at_every_distance():
    """The header's `]` is sought within 41 bytes after `[date time`, all printable before it (16
    at a time by SSE2): at every distance, after a control, DEL or non-ASCII byte at every place,
    ending the buffer or not, every kernel agrees and the parser reads the lines as inline."""
    lines = []
    for head in ("", "\x1b[36m(A pid=1)\x1b[0m "):
        for k in range(46):
            tail = "] x.py:1 - step: {'a': 1}"
            lines.append(head + "[2026-08-21 10:00:00" + "7" * k + tail)
            lines.append(head + "[2026-08-21 10:00:00" + "7" * k + "]")
            for bad in ("\x01", "\x7f", "\u00e9", "\t"):
                lines.append(head + "[2026-08-21 10:00:00" + "7" * (k // 2) + bad + "7" * (k - k // 2) + tail)
        for i in range(20):  # each byte of the date's shape wrong in turn
            stamp = list("[2026-08-21 10:00:00")
            stamp[i] = "x" if stamp[i].isdigit() else "0"
            lines.append(head + "".join(stamp) + "] x.py:1 - step: {'a': 1}")
    for line in lines:
        _kernels_agree(line.encode())
    _kernels_agree("\n".join(lines).encode())
    assert_same([lines])


def test_a_control_byte_that_splits_an_anchor_sends_the_line_to_python():
    """_peel drops control bytes (ESC aside), which may join an anchor (`step 0: \\x1f{`): every
    kernel hands such a line to Python at any offset, and the quick paths read it as the inline
    path does (here: an unreadable cut record, a JSON-style record), not as noise."""
    ctrl = [c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D, 0x1B)] + [0x7F]
    lines = [b"x" * off + b"step 3: " + bytes([c]) + b'{"a": 1}' for c in ctrl for off in range(0, 70, 7)]
    for line in lines:
        _kernels_agree(line)
    data = b"\n".join(lines)
    n, cands, *_ = _scan.scan(data)
    assert cands == list(range(n))
    for tail in ('{"a": 1}', "{"):
        text = ["rollout 0: {}"] + [f"step 0: {chr(c)}{tail}" for c in ctrl]
        fast = assert_same([text])
        inline = LineParser(quick_reject=False)
        items = inline.feed_many(text) + inline.flush()
        assert repr(fast.items) == repr(items) and fast.counts.as_dict() == inline.counts.as_dict()


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_scanner_kernels_agree_on_logs(path):
    with open(path, "rb") as f:
        _kernels_agree(f.read())


# -- blocks that are views of a reused buffer (files._views, judge_path's reader) ------


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_scanner_reused_buffer_blocks_agree(path):
    """feed_block on views of one reused buffer (small blocks: the lines read lazily from one
    block are read before the next overwrites it) gives what feed_lines gives.  Reads of 7
    bytes cut every line of these logs (a block per line, as 1-byte reads give, five times faster)."""
    from grpo_tui.lines.files import _views

    with open(path, "rb") as f:
        longest = max(len(ln) for ln in f.read().split(b"\n"))
    ref = _parse(iter_line_blocks(path), False)
    for chunk in (7, 3000):
        for accel in (True,) if _SANITIZED else (True, False):
            p = LineParser(accel=accel)
            if accel:
                p._scan = _scan
                p._ready_run = True
            p.items = []
            for block in _views(path, chunk, max_line=longest + 1):
                p.items.extend(p.feed_block(block))
            p.items.extend(p.flush())
            assert _state(p) == _state(ref)


# -- heads that say what the message is (_scan.c: miles_class): noise for sure, a common metric --
# record, or "read it in Python".  _feed_head takes the first two without _header_fields; these
# compare it with feed() on messages built to sit on every edge of that decision.

from grpo_tui.lines import native as _parse_mod, patterns as _patterns

_FT_NAMES = ["ok", "phase", "op", "fn", "attempt", "rollout", "cls", "x", "ok2", "_", "a-ok", "Phase"]
_FT_VALUES = [
    "false",
    "true",
    "fail",
    "start",
    "end",
    "train",
    "update_weights",
    "execute",
    "1",
    "0",
    "01",
    "2",
    "-1",
    "99999999999999999",
    "9007199254740991",
    "9007199254740992",
    '"1"',
    '"a b"',
    '"unterminated',
    '"x\\"y"',
    '"x\\',
    "",
    "=x",
    "false,",
    "start)",
    "\u0661",
    "end\u00a0",
]
_FT_SEPS = [" ", "  ", "\t", ",", "", " x", "\u00e9"]


@st.composite
def _ft_messages(draw):
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        parts.append(
            draw(st.sampled_from(_FT_SEPS)) + draw(st.sampled_from(_FT_NAMES)) + "=" + draw(st.sampled_from(_FT_VALUES))
        )
    head = draw(st.sampled_from(["ft", "ft", "ft ", " ft", "ft  ", "FT", "ft\t"]))
    tail = draw(
        st.sampled_from(
            [
                "",
                "",
                " Traceback (most recent call last)",
                " retrying...",
                " Max retries (",
                " checkpoint",
                " Error",
                " : {'a': 1}",
            ]
        )
    )
    return head + "".join(parts) + tail


_ROLES = ["", "", "critic-", "a_1-", "x-y-", "\u00e9-", "1-", "a\u00e9-", "-"]
_KINDS = ["rollout", "perf", "eval", "multi_turn", "step", "passrate", "rolloutx", "Step", "ft"]
_IDS = ["0", "12", "-1", "007", "9007199254740991", "9007199254740992", "99999999999999999", "", "\u0661", "1\u0661"]
_DICTS = [
    "{'a': 1}",
    "{'a': 1, 'b': -2.5e-3}",
    "{}",
    "{'a': nan}",
    "{'a': 1",
    "{'a': 'x'}",
    "... 'a': 1,",
    "\u2026 'a': 1",
    "{'a': 1} ",
    "{'a': 1}\u3000",
    "{'a': 123456789012345678901}",
    "{'a': 1e400}",
    "{'\u00e9': 2}",
    "{'a': 1}}",
    " {'a': 1}",
    "{'a': 1} Error",
]


@st.composite
def _metric_messages(draw):
    return (
        draw(st.sampled_from(_ROLES))
        + draw(st.sampled_from(_KINDS))
        + draw(st.sampled_from([" ", " ", "  ", ""]))
        + draw(st.sampled_from(_IDS))
        + draw(st.sampled_from([": ", ": ", ":", ": x "]))
        + draw(st.sampled_from(_DICTS))
    )


_OTHER_MESSAGES = [
    "[Rank 0] Memory-Usage before update_weights: {'gpu': '0', 'x': 1.5}",
    "x: {y",
    "Error: boom",
    "  lr ........ 1e-06",
    "\u00a0lr ... 1",
    "train_async.py: {'a': 1}",
    "train.py --x 1",
    "Saving tensorboard log to x",
    "W&B offline mode enabled",
    "wandb: x",
    "Job 'a' failed",
    "Recovered 2 dead rollout engines",
    "eval 3 skipped: x",
    "out of memory",
    "x ... y",
    "x",
    "",
    " ",
    "Error",
    "memory pressure",
    "Health check failed",
    "successfully saved checkpoint at iteration 3",
    "retrying... (attempt 1/3)",
    "Traceback (most recent call last):",
    "EXEC: python train.py --a 1",
    "\u00e9 Error x",
    "Max retries (3) exceeded",
    "Watchdog caught collective operation timeout",
    # an event anchor, but none of _classify's texts (noise for sure), or one of them
    "Decode batch (global step: 12)",
    "Decode batch {'bs': 2}",
    "Loading checkpoint shards ...",
    "checkpoint pending",
    "saving checkpoint at iteration 3",
    "saving checkpoint later",
    "successfully saved checkpoint from iteration 7",
    "W&B sync",
    "W&B mode enabled",
    "wandb synced",
    "avoid out of memory",
    "CUDA out of memory",
    "CUDA error: out of memory",
    "OutOfMemory soon",
    "killed due to memory pressure",
    "memory pressure low",
    "tensorboard dir x",
    "see train.py",
    "a skipped: b",
    "Job x",
    "Job 'x' running",
    "x (ft y)",
    "Recovered x",
    "Health check failed ...",
    "EXEC: echo ...",
    "+ ray job submit ...",
    "wandb: x ...",
    "x Saving tensorboard log to y",
    "x ...",
    "Traceback ...",
    "retrying later ...",
    "Max retries ...",
    "Fatal async misuse ...",
    "Fatal async x",
]
_TAILS = [
    "",
    "",
    " [repeated 7x across cluster]",
    "\x1b[32m [repeated 7x across cluster]\x1b[0m",
    "\x1b[32m [repeated 0x across cluster]\x1b[0m ",
    " [repeated 99999999999999999x across cluster]",
    "[repeated 2x across cluster]",
    " [repeated x across cluster]",
    " [repeated 2x across cluster] tail",
    "\u3000[repeated 2x across cluster]",
    " (Ray deduplicates logs by default.)",
    "\x1b[1;32m[repeated 3x across cluster]\x1b[m\t",
    "\x1b[32m\x1b[0m [repeated 3x across cluster]",
    " [repeated 2x across cluster]\x1b[0",
    "\t [repeated 2x across cluster]  ",
    " [repeated 1x across cluster] [repeated 2x across cluster]",
    "[repeated 2x across cluster]]",
    " x\x1b[0m",
    "\x1b[32m[repeated 2x across cluster]\x1b[0m[repeated 3x across cluster]",
    " across cluster]",
]
_DATES = [
    "2026-08-21 10:00:00",
    "2024-02-29 23:59:59",
    "2023-02-29 00:00:00",
    "1900-03-01 00:00:00",
    "0001-01-01 00:00:00",
    "9999-12-31 99:99:99",
    "2026-00-10 10:00:00",
    "2026-13-01 10:00:00",
    "0000-01-01 00:00:00",
    "2000-03-01 12:00:00",
    "2100-12-31 00:00:00",
    "1970-01-01 00:00:00",
]


@st.composite
def _class_lines(draw):
    msg = draw(
        st.one_of(
            _ft_messages(),
            _metric_messages(),
            st.sampled_from(_OTHER_MESSAGES),
            st.text(st.sampled_from(list("ft opk=\"\\ \tErro:{}'1.-a\u00e9")), max_size=30),
        )
    )
    return (
        draw(st.sampled_from(["", "\x1b[36m(A pid=1)\x1b[0m ", "(B pid=2) ", "(A pid=1) "]))
        + "["
        + draw(st.sampled_from(_DATES))
        + draw(st.sampled_from([".123", "", ",045", ".000"]))
        + draw(st.sampled_from([" main", " actor_cell0_rank0", ""]))
        + draw(_HEADER_ENDS)
        + msg
        + draw(st.sampled_from(_TAILS))
    )


# How a header ends before its message: _MILES's `] (LEVEL )file.py:N - `, or shapes only _SGLANG
# reads (`] msg`, `]msg`, ` TP0] msg`) or that fail _MILES at a character \w or \d may go on at.
_HEADER_ENDS = st.one_of(
    st.sampled_from(["] log_utils.py:542 - ", "] INFO log_utils.py:542 - "]),
    st.sampled_from(
        [
            "] ",
            "]",
            "]  ",
            " TP0] ",
            "  x y] ",
            "] INFO ",
            "] INFO: ",
            "] x.py:1 -",
            "] a b.py:1 - ",
            "] x.py:\u0661 - ",
            "] \u00e9.py:1 - ",
            "] x\u00e9.py:1 - ",
            "] x.py:1\u0661 - ",
            "] x.pyc:1 - ",
            "] .py:1 - ",
            "] x.py: - ",
            "]\t",
            "] WARNINGx.py:1 - ",
            "]\u00a0",
            "] x.py:12 ",
            "] [repeated 2x across cluster] ",
        ]
    ),
)


def _feed_head_or_feed(line: str, fast: bool, open_record: bool):
    p = LineParser()
    p._scan = _scan
    p._ready_run = True
    p.feed("[2026-08-21 09:00:00.000 main] x.py:1 - start")
    p.feed("(A pid=1) [2026-08-21 08:00:00] noise")  # a skipped line of source (A pid=1)
    p._remember_skipped("(A pid=1) [2026-08-21 08:00:00] noise")
    if open_record:
        p.feed("(A pid=1) [2026-08-21 09:00:01.000 a] l.py:2 - rollout 1: {'a': 1,")
    heads = _scan.scan(line.encode("utf-8", "surrogatepass"))[4]
    if fast and (not heads or heads[0] is None):
        return None
    p.items = p._feed_head(line, heads[0]) if fast else p.feed(line)
    p.items += p.flush()
    return _state(p) + (p._last_error, p._cur_key)


@FUZZ
@given(_class_lines(), st.booleans())
def test_scanner_message_classes_are_feed(line, open_record):
    """Whatever class the scanner gives a message, _feed_head does exactly what feed does."""
    fast = _feed_head_or_feed(line, True, open_record)
    if fast is not None:
        assert fast == _feed_head_or_feed(line, False, open_record), line


@FUZZ
@given(*_mixes(_class_lines()))
def test_scanner_message_class_mixes_agree(lines, sizes):
    _assert_mix_same(lines, sizes)


@FUZZ
@given(
    st.integers(1, 9999),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(-1, 999),
)
def test_scanner_head_time_is_fast_ts(y, mo, d, hh, mi, ss, ms):
    """The time the scanner reads (days, seconds, ms) is _fast_ts's, or the class says Python reads it."""
    date, time = f"{y:04d}-{mo:02d}-{d:02d}", f"{hh:02d}:{mi:02d}:{ss:02d}"
    mst = f".{ms:03d}" if ms >= 0 else ""
    h = _scan.scan(f"[{date} {time}{mst} main] a.py:1 - ft op=x".encode())[4][0]
    assert h is not None
    want = _patterns._fast_ts(date, time, mst[1:] or None)
    if want is None:
        assert h[_parse_mod._H_CLASS] == _parse_mod._HEAD_OTHER
    else:
        assert h[_parse_mod._H_CLASS] == _parse_mod._HEAD_NOISE
        assert h[_parse_mod._H_DAYS] * 86400 + h[_parse_mod._H_SOD] + h[_parse_mod._H_MSV] / 1000.0 == want


def _head_class(h: tuple) -> int:
    """The class a head says: a ready head (_scan.c: ready_head) is a metric record or an ft event."""
    if len(h) == _parse_mod._READY_METRIC:
        return _parse_mod._HEAD_METRIC
    if len(h) == _parse_mod._READY_FT:
        return _parse_mod._HEAD_FT
    return h[_parse_mod._H_CLASS]


@pytest.mark.parametrize(
    "msg, cls",
    [
        ("ft cls=MegatronTrainRayActor fn=update_weights phase=start", "noise"),
        ("ft op=train phase=start rollout=0 attempt=0", "noise"),
        ("ft op=execute phase=end cell=0 fn=train ok=true elapsed_s=26.8", "noise"),
        ("[Rank 0] Memory-Usage before update_weights: {'gpu': '0', 'total_GB': 79.19}", "noise"),
        (
            "[Rank 7] Memory-Usage before offload model: {'gpu': '7', 'x': 1.5}\x1b[32m [repeated 7x across cluster]\x1b[0m",
            "noise",
        ),
        ("rollout 0: {'rollout/response_lengths': 742.359375, 'rollout/rewards': 3.725290298461914e-09}", "metric"),
        ("critic-step 3: {'a': 1}", "metric"),
        ("perf 0: {'perf/sleep_time': 2.1}\x1b[32m [repeated 2x across cluster]\x1b[0m", "metric"),
        ("ft op=update_weights phase=start rollout=0", "ft"),
        ("ft op=train phase=start rollout=0 attempt=1", "ft"),
        ("ft op=x ok=false", "ft"),
        ("rollout 0: {'a': nan}", "metric"),  # read_dict refuses nan: _feed_head hands it to the Python reader
        ("rollout 0: {'a': 'x'}", "other"),
        ("W&B offline mode enabled.", "other"),
        ("Loading checkpoint shards ...", "noise"),  # an event anchor, but none of _classify's texts
        ("wandb sync done; see tensorboard", "noise"),
        ("Saving checkpoint soon", "noise"),
        ("saving checkpoint at iteration 40", "other"),
        ("CUDA out of memory. Tried to allocate 2 GiB", "other"),
    ],
)
def test_scanner_common_messages_get_their_class(msg, cls):
    line = f"\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m [2026-08-21 09:54:42.681 actor_cell0_rank0] model.py:635 - {msg}"
    h = _scan.scan(line.encode())[4][0]
    assert h is not None
    assert (
        _head_class(h)
        == {
            "other": _parse_mod._HEAD_OTHER,
            "noise": _parse_mod._HEAD_NOISE,
            "ft": _parse_mod._HEAD_FT,
            "metric": _parse_mod._HEAD_METRIC,
        }[cls]
    )
    for fast_first in (True, False):
        assert _feed_head_or_feed(line, True, fast_first) == _feed_head_or_feed(line, False, fast_first)


@pytest.mark.parametrize(
    "line, cls",
    [
        (
            "\x1b[36m(SGLangEngine pid=48101)\x1b[0m [2026-08-21 10:00:33] Decode batch (global step: 12), #token: 5",
            "noise",
        ),
        ("[2026-08-21 10:00:33 TP0] Prefill batch. {'bs': 2}, #new-token: 64", "noise"),
        ("(A pid=1) [2026-08-21 10:00:33.120] Decode batch: {'bs': 2} ...", "noise"),
        ("[2026-08-21 10:00:33]Error in step: 3", "noise"),
        ("[2026-08-21 10:00:33] Loading checkpoint shards ... [repeated 3x across cluster]", "noise"),
        ("[2026-08-21 10:00:33] rollout 3: {'a': 1}", None),  # a record: Python reads it
        ("[2026-08-21 10:00:33] ft op=update_weights phase=end rollout=1", None),
        ("[2026-08-21 10:00:33] saving checkpoint at iteration 3", None),
        ("[2026-08-21 10:00:33]  lr ... 1e-6", None),  # _ARG_DUMP's blank start
        ("[2026-08-21 10:00:33] x\u00e9.py:1 - step: 3", None),  # _MILES's \w goes on: it may match
        ("[2026-08-21 10:00:33 x] a.py:\u0661 - step: 3", None),  # and its \d
        ("[2026-08-21 10:00:33 step: [repeated 2x across cluster]", None),  # the dedup cut takes the ']'
    ],
)
def test_scanner_sglang_headers_of_noise_come_as_heads(line, cls):
    """A line _MILES does not match but _SGLANG does (SGLang's own `[date] msg`) gets a head when
    its message is noise for sure, even with an anchor in it (it is folded into its noise run);
    anything else is read in Python.  Either way _feed_head does what feed does."""
    h = _scan.scan(line.encode())[4][0]
    if cls is None:
        assert h is None
        return
    assert h is not None and _head_class(h) == _parse_mod._HEAD_NOISE
    assert h[7:11] == (-1, -1, -1, -1)  # (_scan.c: H_PROC, H_PROC_END, H_FILE, H_FILE_END) _SGLANG has none
    for open_record in (True, False):
        assert _feed_head_or_feed(line, True, open_record) == _feed_head_or_feed(line, False, open_record)


@pytest.mark.parametrize(
    "msg, ready",
    [
        ("rollout 0: {'rollout/raw_reward': 0.5, 'rollout/truncated': 0.37109375}", _parse_mod._READY_METRIC),
        ("critic-step 3: {'a': 1}\x1b[32m [repeated 2x across cluster]\x1b[0m", _parse_mod._READY_METRIC),
        ("ft op=update_weights phase=end rollout=0 ok=true elapsed_s=3.4", _parse_mod._READY_FT),
        ("ft op=train phase=start rollout=3 attempt=2", _parse_mod._READY_FT),
        ('ft op=x ok=false err="a b" Error', _parse_mod._READY_FT),
        ("rollout 0: {'a': nan}", _parse_mod._H_COUNT),  # the Python reader reads nan
        ("rollout 0: {'a': 123456789012345678901}", _parse_mod._H_COUNT),
        ("ft op=x ok=false \u00e9", _parse_mod._H_COUNT),  # non-ASCII: _ft_event reads it
        ("ft " + " ".join(f"k{i}=1" for i in range(65)) + " ok=false", _parse_mod._H_COUNT),  # past FT_MAX_FIELDS
    ],
)
def test_scanner_common_heads_come_ready(msg, ready):
    """The common metric records and ft events come ready (_scan.c: ready_head; _feed_ready only
    stores them), the rest as offsets; either way _feed_head does what feed does."""
    line = f"\x1b[36m(A pid=1)\x1b[0m [2026-08-21 09:54:42.681 actor_cell0_rank0] model.py:635 - {msg}"
    h = _scan.scan(line.encode())[4][0]
    assert len(h) == ready
    for open_record in (True, False):
        assert _feed_head_or_feed(line, True, open_record) == _feed_head_or_feed(line, False, open_record)


# -- fold: noise-for-sure heads taken into the noise runs (_scan.c: fold, LineParser._take_folded) --

_FOLD_PREFIXES = [
    "",
    "(A pid=1) ",
    "\x1b[36m(A pid=1)\x1b[0m ",
    "(B pid=2) ",
    "\x1b[36m(B pid=2)\x1b[0m ",
    "\x1b[36m(A pid=1, ip=10.0.0.6)\x1b[0m ",
    "(B pid=2, ip=10.0.0.7) ",
]
# header-less texts with an anchor: most noise for sure, some one test away from it (a record,
# an event, a verl/TRL line, a header, a peel that changes them) or the rest of a wrapped line
_QUIET_TEXTS = [
    "Loading checkpoint shards ... 3/4",
    "Loading checkpoint shards: 100%|#| 4/4 [00:01<00:00]",
    "wandb sync done",
    "x (ft y) Error",
    "global step: 3",
    "{'bs': 2}",
    "a {'loss': 1}",
    "step:3 - a:1",
    "step:x",
    "saving checkpoint at iteration 3",
    "EXEC: x",
    "see train.py --x 1",
    "retrying... (attempt 1/3)",
    "x: {'a': 1}",
    "rollout 3: {'a': 1}",
    "0:00] x.py:1 - rollout 3: {'a': 1}",
    "[2026-08-21 x] checkpoint",
    "[x] checkpoint",
    "  lr ... 1",
    "\u00e9 checkpoint",
    "checkpoint\tx",
    "checkpoint \x1b[1mx",
    "checkpoint\x00",
    "checkpoint \ufffd",
    "Error x [repeated 2x across cluster]",
    "(x) checkpoint",
    "1 checkpoint",
    "Error: \u2026",
    "saving checkpoint at iteration      19 to /c in torch_dist format",
    "  successfully saved checkpoint from iteration 19 to /c [ t 1/1, p 1/1 ]",
    "saving checkpoint iteration x",
    "Job 'j' saving checkpoint at iteration 2",
    "[Rank 0] Memory-Usage before offload model: {'gpu': '0'}",
]
_FOLD_PASTED = ["> (A pid=1) ", "12:(A pid=1) ", "  (A pid=1) ", "> ", "7:"]  # keys _paste_key works out


@st.composite
def _fold_lines(draw):
    prefix = draw(st.sampled_from(_FOLD_PREFIXES))
    stamp = f"2026-08-21 10:{draw(st.integers(0, 3)):02d}:{draw(st.integers(0, 59)):02d}"
    stamp += draw(st.sampled_from(["", ".250", ",500", ".999"]))
    kind = draw(st.integers(0, 9))
    if kind <= 3:  # a noise-for-sure head
        msg = draw(
            st.sampled_from(
                [
                    "ft op=x phase=start",
                    "Error in x",
                    "[Rank 0] Memory: {'a': 1}",
                    "x",
                    "ft op=train phase=start attempt=0 Error",
                    "y [repeated 3x across cluster]",
                    "Decode batch (global step: 3)",
                    "Loading checkpoint shards ...",
                ]
            )
        )
        if draw(st.booleans()):
            return f"{prefix}[{stamp}] {msg}"  # SGLang's header (_SGLANG)
        return f"{prefix}[{stamp} main] x.py:1 - {msg}"
    if kind <= 5:  # a stamped noise line, of a plain or a pasted source
        return draw(st.sampled_from(_FOLD_PREFIXES + _FOLD_PASTED)) + f"[{stamp}] Decode batch, #running-req: 3"
    if kind == 6:  # header-less lines: noise, or noise for sure with an anchor (_scan.c: quiet_head)
        return (
            draw(st.sampled_from(["   123", "plain text", ""]))
            if draw(st.booleans())
            else (
                draw(st.sampled_from(_FOLD_PREFIXES + ["(A pid=1)", "\x1b[36m(A pid=1)\x1b[0m", "(pid=1) "]))
                + draw(st.sampled_from(_QUIET_TEXTS))
            )
        )
    if kind == 7:  # header-less lines that read their source's skipped times and errors
        return draw(
            st.sampled_from(
                [
                    "retrying... (attempt 1/60)",
                    "(A pid=1) retrying... (attempt 1/3)",
                    "(B pid=2) Traceback (most recent call last):",
                    '  File "x.py", line 1',
                ]
            )
        )
    if kind == 8:  # a record left open, its continuation, other candidates
        return draw(
            st.sampled_from(
                [
                    f"{prefix}[{stamp} a] l.py:2 - rollout 1: {{'a': 1,",
                    "(A pid=1)  'b': 2}",
                    " 'c': 3}",
                    f"{prefix}[{stamp} a] l.py:2 - step 2: {{'a': 1}}",
                    f"{prefix}[{stamp} main] g.py:1 - ft op=update_weights phase=start rollout=1",
                ]
            )
        )
    return f"{prefix}[{stamp} main] x.py:1 - W&B offline mode enabled"


@FUZZ
@given(st.lists(_fold_lines(), max_size=60), st.lists(st.integers(1, 15), max_size=4))
def test_scanner_folded_heads_agree(lines, sizes):
    assert_same([lines])
    assert_same(_cut(lines, sizes))


@FUZZ
@given(st.lists(st.one_of(_fold_lines(), MIX), max_size=40), st.booleans())
def test_scanner_scan_folded_is_fold_of_scan(lines, as_view):
    """scan_folded (what feed_block calls) gives what fold gives on scan's lists, on views too."""
    data = "\n".join(ln.replace("\n", " ") for ln in lines).encode("utf-8", "surrogatepass")
    n, cands, keep, starts, heads, lasts = _scan.scan(data)
    want = (n, starts) + _scan.fold(data, starts, cands, keep, heads, lasts)
    buf = memoryview(bytearray(data) + b"Error: {'a': 1}\n" * 2)[: len(data)] if as_view else data
    assert _scan.scan_folded(buf) == want
    walk = _scan.scan_raw(buf)  # the reader thread's half, then the parser's
    assert _scan.fold_raw(buf, walk) == want
    assert _scan.fold_raw(buf, walk) == want  # the walk is not used up
    fo = _scan.fold_lazy(buf, walk)  # the parser's: the same, item by item
    assert (fo.n, fo.starts) + fo.lists() == want
    assert [fo.head(k) for k in range(len(want[2]))] == fo.lists()[2]
    del fo


@pytest.mark.parametrize("path", LOGS[:3], ids=os.path.basename)
def test_scanner_walks_in_threads_at_once(path):
    """Two threads walking at once (the walk lets the GIL go; its Line and head arrays are reused
    from one walk to the next through a spare slot), walks kept alive while others run and
    dropped out of order: every walk folds to what scan_folded gives alone."""
    import threading

    with open(path, "rb") as f:
        data = f.read()
    blocks = [data[i : i + 65536] for i in range(0, len(data), 65536)] or [data]
    blocks += [b"x\n" * 40000, b"", b"(A pid=1) [2026-08-21 10:00:01] noise\n" * 3000]  # more lines than guessed
    want = [_scan.scan_folded(b) for b in blocks]
    errors = []

    def worker(order):
        try:
            walks = []
            for i in order:
                walks.append((i, _scan.scan_raw(blocks[i])))
                if len(walks) > 2:
                    j, w = walks.pop(len(walks) // 2)
                    assert _scan.fold_raw(blocks[j], w) == want[j]
            for j, w in walks:
                assert _scan.fold_raw(blocks[j], w) == want[j]
        except BaseException as exc:
            errors.append(exc)

    idx = list(range(len(blocks)))
    threads = [threading.Thread(target=worker, args=(idx * 3,)), threading.Thread(target=worker, args=(idx[::-1] * 3,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_scanner_fold_lazy_takes_only_a_walk_made_its_way():
    """A walk keeping no noise line's time (scan_raw_untimed, read_scan's `untimed`) goes only to
    a parser that keeps none (fold_lazy's `untimed`), and the other way round: their kept lines
    differ, so a read ahead for export never feeds a check."""
    data = (
        b"[2026-08-21 10:00:00.000 main] l.py:1 - start\n"
        + b"\n".join(b"(A pid=1) [2026-08-21 10:00:01.000 s] m.py:3 - noise %d" % i for i in range(50))
        + (b"\n(A pid=1) saving checkpoint at iteration 5 to /x")
    )  # a header-less candidate, line 51
    timed, untimed = _scan.scan_raw(data), _scan.scan_raw_untimed(data)
    with pytest.raises(ValueError):
        _scan.fold_lazy(data, timed, False, True)
    with pytest.raises(ValueError):
        _scan.fold_lazy(data, untimed, False, False)
    with pytest.raises(ValueError):
        _scan.fold_lazy(data, untimed)  # (untimed=False by default)
    a, b = _scan.fold_lazy(data, timed), _scan.fold_lazy(data, untimed, False, True)
    assert a.n == b.n == 52 and a.cand(0) == b.cand(0) == 51  # the same lines and candidates
    assert a.last(0) == 50 and a.keep(0) < 51  # timed: the run's newest stamped line, lines kept
    assert b.last(0) == -1 and b.keep(0) == 52  # untimed: neither
    f = _scan.scan_fold(data, False, True)
    assert (f.last(0), f.keep(0)) == (-1, 52)


def test_scanner_fold_raw_takes_only_the_block_walked():
    """A walk's offsets are of its own buffer: any other buffer (even equal bytes) is refused."""
    data = b"(A pid=1) [2026-08-21 10:00:01] noise\nrollout 1: {'a': 1}"
    walk = _scan.scan_raw(data)
    with pytest.raises(ValueError, match="not the block"):
        _scan.fold_raw(bytes(bytearray(data)), walk)
    with pytest.raises(ValueError, match="not the block"):
        _scan.fold_raw(data[:-1], walk)
    with pytest.raises((TypeError, ValueError)):
        _scan.fold_raw(data, object())


def test_scanner_fold_takes_the_noise_heads():
    lines = [
        "[2026-08-21 10:00:00.000 main] x.py:1 - start",
        "(A pid=1) [2026-08-21 10:00:01] noise",
        "(A pid=1) [2026-08-21 10:00:02.000 a] x.py:1 - ft op=x phase=start",
        "(B pid=2) [2026-08-21 10:00:03] noise",
        "(A pid=1) [2026-08-21 10:00:04] noise",
        "[2026-08-21 10:00:05.000 main] x.py:1 - Error: x",
        "(C pid=3) [2026-08-21 10:00:06.000 a] l.py:2 - rollout 1: {'a': 1}",
    ]  # pops only C
    data = "\n".join(lines).encode()
    n, cands, keep, starts, heads, lasts = _scan.scan(data)
    cands2, keep2, heads2, lasts2, folds, kept = _scan.fold(data, starts, cands, keep, heads, lasts)
    assert 2 not in cands2 and 5 not in cands2 and 6 in cands2
    assert 1 not in keep2 and 4 in keep2 and 3 in keep2  # (A pid=1)'s line before its head is popped
    assert kept == [("(B pid=2)", lines[3]), ("(A pid=1)", lines[4])]
    # per run: its newest head, newest time, that head's key, per key its newest head (by line) and
    # the newest with "Error" in it
    assert folds[cands2.index(6)] == (
        5,
        1787306405.0,
        "",
        (
            (2, "(A pid=1)", "1", ("2026-08-21 10:00:02.000", 1787306402.0)),
            (5, "", None, ("2026-08-21 10:00:05.000", 1787306405.0)),
        ),
        ((5, None, "Error: x"),),
    )
    assert _scan.fold(b"x", b"\0" * 16, [], [], [], [-1]) == ([], [], [], [-1], [None], [])  # one empty run
    with pytest.raises(ValueError):
        _scan.fold(data, starts, cands, keep, heads, lasts[:-1])
    assert_same([lines])


@FUZZ
@given(st.lists(_fold_lines(), min_size=1, max_size=20), st.integers(0, 27), st.integers(-3, 400))
def test_scanner_fold_survives_heads_it_did_not_make(lines, field, value):
    """fold() reads head tuples handed in from Python: one with a field set to anything makes it
    raise or fold what fits, never read outside the buffer."""
    data = "\n".join(lines).encode()
    n, cands, keep, starts, heads, lasts = _scan.scan(data)
    heads = [
        h[:field] + (value,) + h[field + 1 :] if h is not None and len(h) == _parse_mod._H_COUNT else h for h in heads
    ]
    try:
        _scan.fold(data, starts, cands, keep, heads, lasts)
    except (ValueError, UnicodeDecodeError, SystemError):
        pass


# -- keep: a plain candidate pops its own key's skipped lines unread (select_kept) --------------

_PLAIN_A = "(A pid=1) [2026-08-21 10:01:00.000 a] l.py:2 - rollout 1: {'a': 1}"
_PLAIN_C = "(C pid=3) [2026-08-21 10:01:00.000 a] l.py:2 - ft op=train phase=start rollout=1"
_READER_A = "(A pid=1) retrying... (attempt 1/3)"  # header-less: not plain, reads A's skipped lines


def test_scanner_keeps_no_line_a_plain_candidate_of_its_key_pops():
    assert _scan.plain(_PLAIN_A.encode()) and _scan.plain(_PLAIN_C.encode()) and not _scan.plain(_READER_A.encode())
    a = [_noise(i, "(A pid=1) ") for i in range(20)]
    b = [_noise(i, "(B pid=2) ") for i in range(3)]
    cases = [
        # A's lines before A's plain candidate go; B's and A's after it stay (the next block may read them)
        (a + b + [_PLAIN_A] + a[:2], list(range(20, 23)) + [24, 25]),
        # a plain candidate of another key: A's newest 16 stay
        (a + [_PLAIN_C], list(range(4, 20))),
        # a reader between them sees A's newest 16; after it, A's plain candidate drops A's lines
        (a + [_READER_A] + a[:5] + [_PLAIN_A], list(range(4, 20))),
        # A's plain candidate, then A's lines, then one of C's: A's newest 16 stay
        ([_PLAIN_A] + a + [_PLAIN_C], list(range(5, 21))),
        # two plain candidates of A: nothing of A between or before them is kept
        (a[:3] + [_PLAIN_A] + a[:3] + [_PLAIN_A], []),
    ]
    for lines, keep in cases:
        for kernel, got in _all_kernels("\n".join(lines).encode()):
            assert got[2] == keep, (kernel, lines)
        assert_same([lines])
        assert_same(_cut(lines, [1, 3, 7]))


_KEEP_KEYS = ["", "(A pid=1) ", "\x1b[36m(A pid=1)\x1b[0m ", "(B pid=2) ", "> (A pid=1) ", "12:(B pid=2) "]


@st.composite
def _keep_lines(draw):
    """Runs of stamped noise of a few keys, long enough to fill their deques, between plain
    candidates of those keys, header-less readers, records left open and other candidates."""
    key = draw(st.sampled_from(_KEEP_KEYS))
    stamp = f"2026-08-21 10:00:{draw(st.integers(0, 59)):02d}" + draw(st.sampled_from(["", ".250"]))
    kind = draw(st.integers(0, 15))
    if kind <= 7:  # stamped noise, a header line or not
        return key + draw(st.sampled_from([f"[{stamp}] Decode batch", f"[{stamp} m] s.py:3 - Decode batch"]))
    if kind <= 10:  # plain candidates: a complete metric dict, an ft line, a noise-for-sure head
        return (
            key
            + f"[{stamp} a] l.py:2 - "
            + draw(
                st.sampled_from(
                    ["rollout 1: {'a': 1}", "ft op=train phase=start rollout=1", "[Rank 0] Memory: {'a': 1}", "Error x"]
                )
            )
        )
    if kind <= 12:  # header-less readers of their key's skipped times
        return key + draw(
            st.sampled_from(["retrying... (attempt 1/3)", '  File "x.py", line 1', "rollout 2: {'a': 2}", "x"])
        )
    if kind == 13:  # a record left open and its continuation
        return draw(st.sampled_from([key + f"[{stamp} a] l.py:2 - rollout 1: {{'a': 1,", key + " 'b': 2}"]))
    if kind == 14:  # a traceback
        return key + f"[{stamp} a] l.py:2 - Traceback (most recent call last):"
    return key + "plain text"


@FUZZ
@given(st.lists(_keep_lines(), min_size=20, max_size=120), st.lists(st.integers(1, 40), max_size=4))
def test_scanner_keep_around_plain_candidates_agrees(lines, sizes):
    """Fewer kept lines change nothing: on every kernel, whole and cut into batches."""
    was = _scan.kernel()
    try:
        for k in _scan.kernels():
            _scan.kernel(k)
            assert_same([lines])
            assert_same(_cut(lines, sizes))
    finally:
        _scan.kernel(was)


def test_scanner_ready_heads_are_field_tuples_in_the_record_classes_order():
    """Ready heads carry their record's or event's fields as a plain tuple, in the order of
    records.MetricRecord / Event (RECORD_FIELDS / EVENT_FIELDS, which native._load_scan checks):
    Python makes the objects, the C writes into none."""
    import dataclasses

    from grpo_tui.lines import native
    from grpo_tui.lines.records import Event, MetricRecord

    assert tuple(f.name for f in dataclasses.fields(MetricRecord)) == _scan.RECORD_FIELDS
    assert tuple(f.name for f in dataclasses.fields(Event)) == _scan.EVENT_FIELDS
    line = (
        b"[2026-08-21 09:54:42.681 a] l.py:1 - rollout 0: {'a': 0.5, 'b': 3}\n"
        b"[2026-08-21 09:54:42.681 a] l.py:1 - ft op=update_weights phase=start rollout=0"
    )
    heads = _scan.scan(line)[4]
    assert [len(h) for h in heads] == [_parse_mod._READY_METRIC, _parse_mod._READY_FT]
    rf, ef = (h[-1] for h in heads)
    assert type(rf) is tuple and type(ef) is tuple
    rec, ev = MetricRecord(*rf), Event(*ef)
    assert rec == MetricRecord("rollout", 0, {"a": 0.5, "b": 3}, "", "2026-08-21 09:54:42.681", rec.ts, "a", "l.py")
    assert ev == Event(
        "weight_update_start",
        "2026-08-21 09:54:42.681",
        ev.ts,
        0,
        "ft op=update_weights phase=start rollout=0",
        {"rollout": "0"},
    )
    assert rf[10] is not _scan.scan(line)[4][0][-1][10]  # (nonfinite: a dict of its own per head)
    # Fold.run hands out the same fields with the line number set, made into objects in Python
    out: list = [("x",), rf[:9] + (7,) + rf[10:], ef[:3] + (8,) + ef[4:]]
    native.ready_items(out, 1)
    assert out[0] == ("x",) and out[1].line_no == 7 and out[2] == Event(*ef[:3], 8, *ef[4:])
    assert type(out[1]) is MetricRecord and type(out[2]) is Event


def test_a_build_whose_field_order_differs_is_not_used(monkeypatch):
    """A stale build whose ready heads follow other classes is refused: the pure path reads."""
    from grpo_tui.lines import native

    monkeypatch.setattr(_scan, "RECORD_FIELDS", _scan.RECORD_FIELDS[::-1])
    monkeypatch.setattr("grpo_tui.lines.native.pure_asked", lambda: False)
    assert native._load_scan() is None
    monkeypatch.undo()
    monkeypatch.setattr("grpo_tui.lines.native.pure_asked", lambda: False)
    assert native._load_scan() is not None


# -- the store's short-path row writers (_scan.c: put_row, add_row; store/metric_store.py) --

_ROW_VALUE = st.one_of(
    st.floats(), st.floats(allow_nan=False, width=32), st.integers(-(2**70), 2**70), st.booleans(), st.just("x")
)


@FUZZ
@given(
    values=st.lists(_ROW_VALUE, min_size=1, max_size=6),
    row=st.integers(0, 4),
    retype=st.integers(0, 2),
    counts=st.lists(st.sampled_from([math.nan, 1.0, 3.0]), min_size=6, max_size=6),
    start=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=6, max_size=6),
)
def test_scanner_store_row_writers_agree_with_the_pure_ones(values, row, retype, counts, start):
    """put_row / add_row write exactly what the pure writers write (bit for bit, -0.0 and int
    rounding included) and refuse (False, nothing written) exactly when they do."""
    from grpo_tui.store import columns as ms

    n = len(values)
    metrics = {f"k{i}": v for i, v in enumerate(values)}
    types = tuple(map(type, values))
    if retype:  # what a shape remembers: floats and ints only
        types = tuple((float if retype == 1 else int) for _ in values)
    elif not set(types) <= {float, int}:
        types = tuple(float for _ in values)

    def fresh(vals):
        return [np.array(vals[:5], dtype=np.float64) for _ in range(n)]

    a_c, a_py = fresh(start), fresh(start)
    got_c = _scan.put_row(tuple(memoryview(a) for a in a_c), row, metrics, types)
    got_py = ms._put_row_py(tuple(memoryview(a) for a in a_py), row, metrics, types)
    assert got_c == got_py
    assert [a.tobytes() for a in a_c] == [a.tobytes() for a in a_py]
    s_c, s_py, c_c, c_py = fresh(start), fresh(start), fresh(counts), fresh(counts)
    got_c = _scan.add_row(tuple(map(memoryview, s_c)), tuple(map(memoryview, c_c)), row, metrics, types)
    got_py = ms._add_row_py(tuple(map(memoryview, s_py)), tuple(map(memoryview, c_py)), row, metrics, types)
    assert got_c == got_py
    assert [a.tobytes() for a in s_c + c_c] == [a.tobytes() for a in s_py + c_py]


def test_scanner_store_row_writers_refuse_what_they_cannot_write():
    """Anything but float64 views long enough, matching lengths, or a dict: False, nothing written
    (the store's long path decides); a bad row number is the caller's error."""
    a = np.zeros(3)
    v = memoryview(a)
    ok = {"a": 1.5}
    assert _scan.put_row((v,), 2, ok, (float,)) is True and a[2] == 1.5
    for views, row, values, types in [
        ((v,), 3, ok, (float,)),
        ((v,), -1, ok, (float,)),
        ((memoryview(np.zeros(3, dtype=np.float32)),), 0, ok, (float,)),
        ((memoryview(bytearray(24)),), 0, ok, (float,)),
        ((memoryview(np.zeros(6))[::2],), 0, ok, (float,)),
        ((memoryview(bytes(24)).cast("d"),), 0, ok, (float,)),
        ((v, v), 0, ok, (float,)),
        ((v,), 0, {"a": 1.5, "b": 2.0}, (float,)),
        ((v,), 0, [1.5], (float,)),
        ((v,), 0, ok, [float]),
        ((), 0, {}, ()),
        ((v,), 0, {"a": 10**400}, (int,)),
        ((v,), 0, ok, (int,)),
    ]:
        before = a.tobytes()
        assert _scan.put_row(views, row, values, types) is False
        assert a.tobytes() == before
    with pytest.raises(TypeError):
        _scan.put_row((v,), "0", ok, (float,))
    with pytest.raises(TypeError):
        _scan.add_row((v,), 0, ok, (float,))


_CSV_CELL = st.one_of(st.floats(), st.integers(-(2**80), 2**80), st.none(), st.sampled_from([-0.0, 5e-324, 1e16, 1e-5]))


@FUZZ
@given(
    cols=st.integers(1, 5).flatmap(
        lambda m: st.integers(0, 6).flatmap(
            lambda n: st.lists(
                st.one_of(st.none(), st.lists(_CSV_CELL, min_size=n, max_size=n)), min_size=m, max_size=m
            ).map(lambda c: (n, c))
        )
    ),
    odd=st.sampled_from([None, True, "a", 1.5j, [1.0]]),
)
def test_scanner_csv_rows_is_the_rows_csv_writes(cols, odd):
    """csv_rows (export's writer of float/int/None cells) gives csv.writer's text for them, and
    None as soon as a cell of another type is met (the Python path writes those).  As in export,
    the first column is the rollout ids (csv.writer quotes a row of one empty field)."""
    import csv
    import io

    n, columns = cols
    columns = [list(range(n))] + columns
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for i in range(n):
        w.writerow(
            [("" if c is None or c[i] is None else repr(c[i]) if type(c[i]) is float else c[i]) for c in columns]
        )
    assert _scan.csv_rows(columns, n) == buf.getvalue()
    if odd is not None and n:
        j = len(columns) - 1 if columns[-1] is not None else 0
        bad = [list(c) if c is not None else None for c in columns]
        bad[j][n - 1] = odd
        assert _scan.csv_rows(bad, n) is None


def _bits_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def test_scanner_float_repr_is_repr_at_every_exponents_edges():
    """csv_rows writes floats with Ryu (_scan.c: ryu_repr), not repr()'s dtoa: the same text at
    both ends of every binary exponent's mantissas (subnormals, powers of two, whose interval is
    lopsided), around every power of ten and where repr() switches to an exponent."""
    checked = 0
    for e in range(2047):
        for m in (0, 1, 2, 3, 1 << 51, (1 << 51) + 1, (1 << 52) - 2, (1 << 52) - 1):
            for sign in (0, 1 << 63):
                x = _bits_float(sign | e << 52 | m)
                assert _scan.float_repr(x) == repr(x), (e, m, sign)
                checked += 1
    for k in range(-325, 309):
        for text in ("1e%d", "5e%d", "9.999999999999999e%d", "1.5e%d", "2.5e%d", "1.7976931348623157e%d"):
            x = float(text % k)
            if math.isfinite(x):
                assert _scan.float_repr(x) == repr(x), text % k
    for x in (
        1e16,
        9999999999999998.0,
        1e15,
        1e-4,
        1e-5,
        9.999999999999999e-05,
        0.0001,
        0.1,
        0.3,
        5e-324,
        742.359375,
        1024.0,
        3.725290298461914e-09,
        -0.0003856149685135366,
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
    ):
        assert _scan.float_repr(x) == repr(x)
    assert checked == 2047 * 16


def test_scanner_float_repr_is_repr_on_random_doubles():
    """Ryu against repr() on random bit patterns (every exponent alike) and on values like a
    log's (a few to 17 digits, 1e-12 to 1e20).  (Sweeps of 3 x 10^7 more found no difference.)"""
    rnd = random.Random(11)
    for _ in range(25_000):
        x = _bits_float(rnd.getrandbits(64))
        if math.isfinite(x):
            assert _scan.float_repr(x) == repr(x), x.hex()
        y = float("%.*g" % (rnd.randint(1, 17), rnd.random() * 10.0 ** rnd.randint(-12, 20)))
        assert _scan.float_repr(y) == repr(y), y.hex()


@FUZZ
@given(x=st.floats(), d=st.decimals(allow_nan=False, allow_infinity=False, places=None))
def test_scanner_float_repr_is_repr(x, d):
    assert _scan.float_repr(x) == repr(x)
    y = float(d)
    assert _scan.float_repr(y) == repr(y)


_NUM_CELL = st.one_of(st.floats(), st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1e16, 1e-5]))
# (n, columns): 1-4 columns of n cells each, every one blank (None), floats or ints
_NUM_COLUMNS = st.integers(1, 4).flatmap(
    lambda m: st.integers(0, 6).flatmap(
        lambda n: st.lists(
            st.one_of(
                st.none(),
                st.lists(_NUM_CELL, min_size=n, max_size=n).map(lambda v: (v, "f")),
                st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n).map(lambda v: (v, "i")),
            ),
            min_size=m,
            max_size=m,
        ).map(lambda c: (n, c))
    )
)


@FUZZ
@given(cols=_NUM_COLUMNS)
def test_scanner_csv_rows_of_number_columns_only(cols):
    """Every column a number column (export's rollout ids among them) or blank: csv_rows writes
    the rows without the GIL (number_rows), the same text as from lists of those cells (NaN:
    blank; an int column's cell a long long does not hold as a float64: None, Python's)."""
    n, columns = cols
    arrays = [c if c is None else (np.array(c[0], dtype=np.float64), c[1]) for c in columns]
    lists = [
        None
        if c is None
        else [None if v != v else int(v) if k == "i" else v for v in np.array(c[0], dtype=np.float64).tolist()]
        for c, k in ((c, None if c is None else c[1]) for c in columns)
    ]
    want = _scan.csv_rows(lists, n)
    got = _scan.csv_rows(arrays, n)
    big = any(c is not None and c[1] == "i" and len(c[0]) and max(abs(v) for v in c[0]) >= 9.2e18 for c in columns)
    assert got == (None if big and n else want)


@FUZZ
@given(
    cols=_NUM_COLUMNS,
    names=st.lists(st.text(max_size=6), min_size=4, max_size=4),
)
def test_scanner_csv_rows_as_json_objects_are_jsons(cols, names):
    """csv_rows with keys (export.write_rollout_json): each row the JSON object json.dumps writes
    of its cells that are not blank, joined by ", "; None where JSON can't say a cell (inf) or
    an int cell a long long does not hold, and for a column that is a list (Python's rows)."""
    import json

    n, columns = cols
    keys = [json.dumps(f"{k}{j}") + ": " for j, k in enumerate(names[: len(columns)])]
    arrays = [c if c is None else (np.array(c[0], dtype=np.float64), c[1]) for c in columns]
    rows = []
    for i in range(n):
        row = {}
        for j, c in enumerate(arrays):
            if c is not None and c[0][i] == c[0][i]:
                row[json.loads(keys[j][:-2])] = int(c[0][i]) if c[1] == "i" else float(c[0][i])
        rows.append(row)
    cells = [v for r in rows for v in r.values()]
    odd = any(isinstance(v, float) and math.isinf(v) for v in cells) or any(
        isinstance(v, int) and abs(v) >= 9.2e18 for v in cells
    )
    got = _scan.csv_rows(arrays, n, keys)
    assert got == (None if odd else ", ".join(json.dumps(r) for r in rows))
    if n and any(c is not None for c in columns):
        lists = [None if c is None else [float(x) for x in c[0]] for c in arrays]
        assert _scan.csv_rows(lists, n, keys) is None
    with pytest.raises(ValueError):
        _scan.csv_rows(arrays, n, keys + ['"x": '])
    with pytest.raises(TypeError):
        _scan.csv_rows(arrays, n, ["\u00e9"] * len(arrays))


_COUNT = st.one_of(st.sampled_from([math.nan, 0.0, -0.0, 1.0, 2.0, 3.0, -1.0, math.inf]), st.floats())


@FUZZ
@given(
    st.integers(0, 12).flatmap(
        lambda n: st.tuples(
            st.lists(_NUM_CELL, min_size=n, max_size=n),
            st.lists(_COUNT, min_size=n, max_size=n),
            st.integers(0, n),
            st.integers(0, 3),
        )
    )
)
def test_scanner_col_means_and_counted_nan_are_numpys(case):
    """col_means and counted_nan (export's table without numpy) over a train metric's sums and
    counts as the store keeps them (array('d'), longer than the rows read): numpy's values bit
    for bit (Segment.values_at_rows), numpy's answer (rollout_table._logged_exceptions)."""
    from array import array

    sums, counts, n, extra = case
    s, c = array("d", sums + [1.0] * extra), array("d", counts + [math.nan] * extra)
    sn, cn = np.array(sums[:n]), np.array(counts[:n])
    with np.errstate(all="ignore"):
        want = np.where(cn > 0, sn / np.where(cn > 0, cn, 1), math.nan)
    got = _scan.col_means(s, c, n)
    assert got == want.tobytes()
    assert _scan.counted_nan(s, c, n) == bool(np.isnan(sn[~np.isnan(cn)]).any())
    for bad in ((s, c, len(s) + 1), (s, array("f", [1.0] * len(c)), 0), (s, c, -1)):
        with pytest.raises(ValueError):
            _scan.col_means(*bad)
        with pytest.raises(ValueError):
            _scan.counted_nan(*bad)


def test_export_formats_stretches_of_rows_in_two_threads_in_order(tmp_path, monkeypatch):
    """export's CSV in stretches of rows (some made by a second thread): the same text as in one
    stretch, a stretch csv_rows leaves to Python among them, and an error in the second thread
    raised in the caller's."""
    from grpo_tui import export, pipeline
    from grpo_tui.simulate import generate

    log = tmp_path / "run.log"
    log.write_text("".join(line + "\n" for _, line in generate("healthy", 50, 1, noise_per_rollout=3)))
    store = pipeline.judge_path(str(log), judging=False).store
    whole = export.render(store)
    monkeypatch.setattr(export, "_CSV_ROWS", 7)
    assert export.render(store) == whole
    real = export._csv_rows
    calls = []

    def some_left_to_python(cols, n):
        calls.append(n)
        return None if len(calls) == 2 else real(cols, n)

    monkeypatch.setattr(export, "_csv_rows", some_left_to_python)
    assert export.render(store) == whole and len(calls) >= 7

    def fails_in_the_helper(cols, n):
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("csv failed")
        return real(cols, n)

    import threading

    monkeypatch.setattr(export, "_csv_rows", fails_in_the_helper)
    with pytest.raises(RuntimeError, match="csv failed"):
        export.render(store)
    assert not [t for t in threading.enumerate() if t.name == "grpo-tui-csv"]


def test_scanner_csv_rows_refuses_columns_of_other_lengths():
    with pytest.raises(ValueError):
        _scan.csv_rows([[1.0, 2.0], [1.0]], 2)
    with pytest.raises(TypeError):
        _scan.csv_rows(([1.0],), 1)
    assert _scan.csv_rows([[0, 1], None], 2) == "0,\n1,\n"


def test_scanner_store_row_writers_refuse_released_or_misaligned_views():
    a = np.full(4, np.nan)
    v = memoryview(a)
    v.release()
    assert _scan.put_row((v,), 1, {"x": 2.0}, (float,)) is False and np.isnan(a[1])
    odd = memoryview(bytearray(40))[1:33].cast("d")
    assert _scan.put_row((odd,), 0, {"x": 2.0}, (float,)) is False
    assert _scan.add_row((memoryview(np.zeros(2)),), (odd,), 0, {"x": 2.0}, (float,)) is False


# -- ready_run: _feed_scanned's stretches of noise runs and ready heads walked in C --------------


def _parse_run(batches, stretch: bool, blocks: bool) -> LineParser:
    """Accelerated both ways; `stretch`: ready_run walks the stretches, else the loop's own code."""
    p = LineParser()
    p._scan = _scan
    p._ready_run = stretch
    p.items = []
    for lines in batches:
        p.items.extend(
            p.feed_block("\n".join(lines).encode("utf-8", "surrogatepass")) if blocks else p.feed_lines(list(lines))
        )
    p.items.extend(p.flush())
    return p


def assert_run_same(batches) -> None:
    batches = [list(b) for b in batches]
    for blocks in (True, False):
        with_run, without = _parse_run(batches, True, blocks), _parse_run(batches, False, blocks)
        assert _state(with_run) == _state(without)
        assert [x.line_no for x in with_run.items] == [x.line_no for x in without.items]


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_scanner_ready_run_is_the_loop_on_logs(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    assert_run_same([lines])
    assert_run_same(_cut(lines, [1, 2, 9, 300]))  # short runs across blocks: the unread noise tail


@FUZZ
@given(*_mixes(_head_lines(), st.builds(_noise, st.integers(0, 99), st.sampled_from(["", "(A pid=1) "]))))
def test_scanner_ready_run_is_the_loop_on_mixes(lines, sizes):
    lines = [ln.replace("\n", " ") for ln in lines]
    assert_run_same([lines])
    assert_run_same(_cut(lines, sizes))


def test_scanner_ready_run_leaves_the_names_cap_to_python():
    """Past MAX_NAMES the record is capped by Python (ready_run stops before it): the same."""
    from grpo_tui.lines.patterns import MAX_NAMES

    lines = ["[2026-08-21 10:00:00.000 main] log_utils.py:1 - start"]
    per = 300
    for r in range(MAX_NAMES // per + 3):
        body = ", ".join(f"'m{r * per + k}/x': {k}.5" for k in range(per))
        lines.append(f"(A pid=1) [2026-08-21 10:00:0{r % 10}.000 a] l.py:2 - rollout {r}: {{{body}}}")
        lines.extend(_noise(i, "(B pid=2) ") for i in range(12))
    assert_run_same([lines])
    p = _parse_run([lines], True, True)
    assert len(p._names) == MAX_NAMES


def test_scanner_fold_refuses_positions_it_does_not_have():
    """Fold.run and the accessors take only positions within the fold; nothing is read out of
    bounds (ASan stage)."""
    data = "\n".join(
        ["[2026-08-21 10:00:00.000 main] l.py:1 - start"]
        + [f"(A pid=1) [2026-08-21 10:00:01.000 a] l.py:2 - rollout {i}: {{'a': {i}}}" for i in range(3)]
        + [_noise(i, "") for i in range(20)]
    ).encode()
    fo = _scan.scan_fold(data)
    nc = len(fo.lists()[0])

    def call(**kw):
        a = dict(
            i=1,
            ci=0,
            ki=0,
            base=0,
            names=set(),
            max_names=1024,
            last_time={},
            skipped={},
            last_error={},
            source_key=lambda s: "",
            new_deque=list,
            tail_unread=False,
            last_ts=0.0,
            out=[],
            lean=False,
            noise_empty=True,
            tail_from=-1,
            tail_whole=False,
        )
        a.update(kw)
        return fo.run(*a.values())

    got = call()
    assert got[0] == fo.n and got[3] == fo.n - 1  # every line after the first, walked
    for far in (-5, 0, 1, 10**9, -(10**9)):  # a tail anywhere: taken only before i
        call(tail_unread=True, tail_from=far, noise_empty=False)
    for bad in (dict(ci=nc + 1), dict(ci=-1), dict(i=-1), dict(ki=10**6), dict(i=fo.cand(1) + 1, ci=1)):
        with pytest.raises(ValueError):
            call(**bad)
    for bad in (dict(names={}), dict(out=()), dict(last_time=[])):
        with pytest.raises(TypeError):
            call(**bad)
    with pytest.raises(TypeError):
        fo.run(1, 2)
    for get, top in ((fo.cand, nc), (fo.head, nc - 1), (fo.last, nc), (fo.fold, nc)):
        get(top)
        for k in (top + 1, -1):
            with pytest.raises(IndexError):
                get(k)
    with pytest.raises(IndexError):
        fo.kept(0 if not fo.lists()[1] else len(fo.lists()[1]))


def test_scanner_fold_holds_its_block():
    """A Fold holds its block's buffer: the reused buffer can't be released (and read again)
    while one is alive; another block's walk is refused."""
    data = b"[2026-08-21 10:00:00.000 main] l.py:1 - start\n" + b"x\n" * 10
    view = memoryview(bytearray(data))
    fo = _scan.fold_lazy(view, _scan.scan_raw(view))
    with pytest.raises(BufferError):
        view.release()
    del fo
    view.release()
    with pytest.raises(ValueError):
        _scan.fold_lazy(bytes(data), _scan.scan_raw(data[:-1]))


# -- the metric dicts read ahead in the reader thread (_scan.c read_ahead, dict_pairs) -----------

_DICT_TEXT = st.builds(
    lambda pairs, sep, end: "{" + sep.join(f"'{k}': {v}" for k, v in pairs) + "}" + end,
    st.lists(st.tuples(_KEY, _NUM), max_size=6),
    st.sampled_from([", ", ","]),
    st.sampled_from(["", " ", " x", "\t"]),
)


@FUZZ
@given(
    st.lists(
        st.one_of(
            _DICT_TEXT.map(lambda d: f"(A pid=1) [2026-08-21 10:00:01.000 a] l.py:2 - rollout 3: {d}"),
            st.builds(_noise, st.integers(0, 99), st.just("")),
        ),
        max_size=12,
    ),
    st.lists(st.integers(1, 5), max_size=3),
)
def test_scanner_read_ahead_dicts_agree(lines, sizes):
    """Metric heads whose dicts the reader thread read ahead (every value kind, keys that are not
    ASCII or hold a quote, values strtod must read, dicts the Python reader takes): the same
    records as the pure path, in one block and cut in many."""
    lines = ["[2026-08-21 10:00:00.000 main] l.py:1 - start"] + [ln.replace("\n", " ") for ln in lines]
    for batches in ([lines], _cut(lines, sizes)):
        fast, pure = _parse_blocks(batches, True), _parse_blocks(batches, False)
        assert _state(fast) == _state(pure)


def test_scanner_read_ahead_reads_the_values_strtod_must():
    """Values quick_double leaves to PyOS_string_to_double (subnormal, 20+ digits) and ints at
    18 characters: read ahead as text or ints, made under the GIL, equal to float()/int()."""
    values = [
        "4.9e-324",
        "2.2250738585072014e-308",
        "0.12345678901234567890123",
        "123456789012345678",
        "-12345678901234567",
        "1e22",
        "1e23",
        "9007199254740993.0",
    ]
    body = ", ".join(f"'k{i}': {v}" for i, v in enumerate(values))
    data = (
        "[2026-08-21 10:00:00.000 main] l.py:1 - start\n"
        f"(A pid=1) [2026-08-21 10:00:01.000 a] l.py:2 - rollout 1: {{{body}}}"
    ).encode()
    p = LineParser()
    p._scan = _scan
    p._ready_run = True
    items = p.feed_block(data) + p.flush()
    got = items[0].metrics
    want = [int(v) if v.lstrip("-").isdigit() else float(v) for v in values]
    assert list(got.values()) == want and [type(v) for v in got.values()] == [type(v) for v in want]


def test_scanner_unreadable_candidate_reads_no_key():
    """A headed line with U+FFFD past its anchor is unreadable to feed() (more than four): it
    reads and drops no source's skipped lines, so the scanner keeps the line before it (found by
    the head-lines fuzz: the scanner took it for a plain candidate popping its own key)."""
    lines = [
        "[2026-08-21 10:00:00.123 main] log_utils.py:542 - rollout 3: {'a': 1, 'b': -2.5e-3}",
        "Update weights:  48%|\u2588\u2588\u2588\u2588\u258a     | 14/29 [00:01<00:01,  7.77it/s]",
        "[2026-08-21 10:00:00.123 main] log_utils.py:542 - Error " + "\ufffd" * 5,
    ]
    p = assert_same([lines])
    assert {k: list(v) for k, v in p._skipped.items()} == {"": [lines[1]]}
    assert _scan.plain(lines[2].encode()) is False and _scan.plain(lines[2][:-5].encode()) is True
    assert _parse_blocks([lines], True)._skipped == _parse_blocks([lines], False)._skipped


@pytest.mark.parametrize(
    "msg",
    [
        b"Error " + b"\xe2\x1b[0m\x82\xac" * 3,
        b"W&B offline " + b"\xe2\x1b[0m\x82\xac" * 3,
        b"\x1b[32mW&B\x1b[0m " + b"\xe2\x1b[0m\x82\xac" * 3,
        b"x \xff\xff\xff\xff\xff",
        b"rollout 4: {'a': 2} \xff\xff\xff\xff\xff",
        b"ft op=train phase=start \xff" * 5,
    ],
)
@pytest.mark.parametrize("prefix", [b"", b"(A pid=1) ", b"\x1b[36m(A pid=1)\x1b[0m "])
def test_scanner_bad_bytes_split_by_colours_read_no_key(msg, prefix):
    """Bytes that are not UTF-8 decode to U+FFFD (feed() may find the line unreadable) even where
    taking the colours out would join them into valid text (review of the U+FFFD fix): judged
    on the line's own bytes, so the line kept before it stays kept."""
    first = b"[2026-08-21 10:00:00.123 main] log_utils.py:542 - rollout 3: {'a': 1, 'b': -2.5e-3}"
    noise = prefix + b"Update weights:  48%| 14/29 [00:01<00:01,  7.77it/s]"
    line = prefix + b"[2026-08-21 10:00:03.000 main] x.py:1 - " + msg
    assert not _scan.plain(line) or line.decode("utf-8", "replace").count("\ufffd") == 0
    data = b"\n".join([first, noise, line, b"tail noise"])
    states = []
    for accel in (True, False):
        p = LineParser(accel=accel)
        if accel:
            p._scan = _scan
            p._ready_run = True
        p.items = p.feed_block(data) + p.flush()
        states.append(_state(p))
    assert states[0] == states[1]


def test_scanner_constants_are_the_parsers():
    """_scan.c copies two of native.py's constants; native.py refuses a build that disagrees."""
    from grpo_tui.lines import native

    assert (_scan.REJOIN_PARTS, _scan.PER_KEY) == (native._REJOIN_PARTS, native._SKIPPED_PER_SOURCE)


# -- the read and the walk in one call (_scan.c: read_scan; files._views' `walk`) -------
# The same blocks as reading and scanning apart, each walk the one scan_raw makes of its block
# (its metric dicts read in it or not).

_RS_LINE = (
    "[2026-08-21 10:00:{s:02d}.000 main] x.py:1 - noise line {n}\n"
    "[2026-08-21 10:00:{s:02d}.500 RolloutManager] data.py:9 - rollout {n}: {{'rollout/raw_reward': 0.{n}, "
    "'rollout/response_length': {n}}}\n"
)
_HAS_READ_SCAN = pytest.mark.skipif(not hasattr(_scan, "read_scan"), reason="this build has no read_scan")

from grpo_tui.lines.files import _views


def _walk_fold(block, walk) -> str:
    """What the parsing thread makes of a walk (repr: nan equals nan there)."""
    return repr(_scan.fold_raw(block, walk))


def _walked_blocks(path: str, pairs: bool = False, **kw) -> list[tuple[bytes, str | None]]:
    """_views' blocks with `walk`, each with its walk folded (None: the caller scans it)."""
    out = []

    def walk(fd, mv, have, want, max_line):
        return _scan.read_scan(fd, mv, have, want, max_line, pairs)

    for block, w in _views(path, walk=walk, **kw):
        out.append((bytes(block), None if w is None else _walk_fold(block, w)))
    return out


def _apart_blocks(path: str, **kw) -> list[tuple[bytes, str]]:
    return [(bytes(b), _walk_fold(b, _scan.scan_raw(b))) for b in _views(path, **kw)]


@_HAS_READ_SCAN
@FUZZ
@given(
    data=st.lists(
        st.sampled_from(
            [
                b"a",
                b"bc",
                b"\n",
                b"\n\n",
                b"\xff",
                b"long" * 5,
                b"rollout 1: {'a': 1}",
                b"[2026-08-21 10:00:00.000 main] x.py:1 - ",
                b"\x1b[36m(A pid=1)\x1b[0m ",
            ]
        ),
        max_size=80,
    ).map(b"".join),
    chunk=st.integers(1, 60),
    limit=st.integers(1, 40),
    buffers=st.integers(1, 4),
    end=st.one_of(st.none(), st.integers(0, 400)),
    pairs=st.booleans(),
)
def test_scanner_read_scan_fuzzed_gives_the_blocks_and_their_walks(
    tmp_path_factory, data, chunk, limit, buffers, end, pairs
):
    """Any bytes, block size, line limit (long lines cut), `end`: the same blocks as without
    `walk`, and each walk folds as scan_raw's walk of that block does; a block left unwalked
    is one the caller must scan (bytes: cut long lines, or the last line without its newline)."""
    p = tmp_path_factory.mktemp("w") / "x.log"
    p.write_bytes(data)
    kw = dict(chunk=chunk, max_line=limit, buffers=buffers, end=end)
    walked, apart = _walked_blocks(str(p), pairs, **kw), _apart_blocks(str(p), **kw)
    assert [b for b, _ in walked] == [b for b, _ in apart]
    for (_, w), (_, ref) in zip(walked, apart):
        assert w is None or w == ref
    if all(len(ln) <= limit for ln in data.split(b"\n")):  # no line cut: every block is walked
        unended = end is None and data and not data.endswith(b"\n")  # but the last line's own
        assert all(w is not None for _, w in (walked[:-1] if unended else walked))


@_HAS_READ_SCAN
@FUZZ
@given(
    data=st.lists(
        st.sampled_from(
            [
                b"a",
                b"bc",
                b"\n",
                b"\n\n",
                b"\xff",
                b"rollout 1: {'a': 1}",
                b"[2026-08-21 10:00:00.000 main] x.py:1 - ",
                b"\x1b[36m(A pid=1)\x1b[0m ",
            ]
        ),
        min_size=1,
        max_size=60,
    ).map(b"".join),
    walk_to=st.integers(-1, 400),
    pairs=st.booleans(),
)
def test_scanner_read_scan_walks_up_to_walk_to(tmp_path_factory, data, walk_to, pairs):
    """read_scan's `walk_to`: the walk is of buf[:mid], mid the first newline at or past walk_to
    with a line after it before cut (-1: none, the walk is of buf[:cut] as without it), and it
    folds as scan_raw's walk of that view does; the read is the same."""
    p = tmp_path_factory.mktemp("w") / "x.log"
    p.write_bytes(data)
    buf = memoryview(bytearray(len(data) + 8))
    with open(p, "rb") as f:
        n, cut, walk, mid = _scan.read_scan(f.fileno(), buf, 0, len(data), 1 << 20, pairs, False, walk_to)
    assert n == len(data) and cut == data.rfind(b"\n")
    nl = data.find(b"\n", walk_to, cut) if 0 < walk_to < cut else -1
    assert mid == (nl if nl >= 0 and nl + 1 < cut else -1)
    if walk is None:
        assert cut < 0 and mid == -1
        return
    end = mid if mid >= 0 else cut
    assert _walk_fold(buf[:end], walk) == _walk_fold(buf[:end], _scan.scan_raw(buf[:end]))


@_HAS_READ_SCAN
@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_scanner_read_scan_on_the_sample_logs(path):
    for chunk in (4096, 1 << 16):
        walked = _walked_blocks(path, True, chunk=chunk, buffers=3)
        apart = _apart_blocks(path, chunk=chunk, buffers=3)
        assert [b for b, _ in walked] == [b for b, _ in apart]
        assert all(w == ref for (_, w), (_, ref) in zip(walked, apart) if w is not None)
        assert sum(w is not None for _, w in walked) >= len(walked) - 1  # all but a last unended line
        assert _walked_blocks(path, False, chunk=chunk) == walked


@_HAS_READ_SCAN
def test_scanner_read_scan_walks_the_view_where_it_lies(tmp_path):
    """The walk is of buf[:cut] itself: fold_raw takes it for that view and refuses another."""
    p = tmp_path / "x.log"
    p.write_text("".join(_RS_LINE.format(n=i, s=i % 60) for i in range(50)))
    buf = memoryview(bytearray(1 << 16))
    with open(p, "rb") as f:
        n, cut, walk = _scan.read_scan(f.fileno(), buf, 0, 1 << 15, 1 << 20)
    assert n == p.stat().st_size and cut == n - 1 and walk is not None
    assert _walk_fold(buf[:cut], walk) == _walk_fold(buf[:cut], _scan.scan_raw(buf[:cut]))
    with pytest.raises(ValueError):
        _scan.fold_raw(buf[: cut - 1], walk)


@_HAS_READ_SCAN
def test_scanner_read_scan_refuses_bad_arguments_and_passes_read_errors(tmp_path):
    buf = bytearray(64)
    with open(tmp_path / "x.log", "wb") as f:
        f.write(b"a\n")
    with open(tmp_path / "x.log", "rb") as f:
        fd = f.fileno()
        for args in [
            (fd, buf, -1, 8, 10),
            (fd, buf, 0, 65, 10),
            (fd, buf, 60, 5, 10),
            (-1, buf, 0, 8, 10),
            (fd, buf, 0, 8, 0),
        ]:
            with pytest.raises(ValueError):
                _scan.read_scan(*args)
        with pytest.raises(TypeError):
            _scan.read_scan(fd, buf, 0, 8)
        with pytest.raises((TypeError, BufferError)):
            _scan.read_scan(fd, b"read-only", 0, 4, 10)
        assert _scan.read_scan(fd, buf, 0, 64, 10)[:2] == (2, 1)
        assert _scan.read_scan(fd, buf, 0, 64, 10) == (0, -1, None)  # the end of the file
    dfd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(OSError):
            _scan.read_scan(dfd, buf, 0, 8, 10)  # EISDIR: an OSError, as readinto
    finally:
        os.close(dfd)


# -- header-less noise for sure (_scan.c: quiet_head, LineParser._feed_quiet) ----------------------


@pytest.mark.parametrize(
    "line, quiet",
    [
        ("\x1b[36m(RolloutManager pid=48211)\x1b[0m Loading checkpoint shards: 100%|##| 4/4 [00:03<00:00]", True),
        ("(A pid=1) wandb sync done, step: 3 ...", True),
        ("Loading checkpoint shards ... 3/4", True),
        ("UserWarning: the checkpoint format is old; Error rate 0", True),
        ("[miles-pp_0] Update weights: 291it [00:08, 34.61it/s] checkpoint", True),
        ("(A pid=1) step:3 - loss:0.5", False),  # verl
        ("{'loss': 0.5, 'epoch': 1}", False),  # TRL
        ("(A pid=1) ('Final validation metrics: {'val-core/gsm8k/reward/mean@1': '", False),  # verl's end
        ("(A pid=1) 'Final validation metrics: None'", False),  # (no ': {': its own anchor)
        ("(A pid=1) Final validation of {'a': 1}", True),  # not the end line
        ("(A pid=1) rollout 3: {'a': 1}", False),  # a record
        ("(A pid=1) saving checkpoint at iteration 3", False),  # an event
        ("EXEC: python train.py --x 1", False),
        ("(A pid=1) x.py --y 1 train.py", False),  # the launch line (header=False)
        ("  lr ... 1e-6", False),  # _ARG_DUMP
        ("[2026-08-21 10:00:00 checkpoint", False),  # a header may start there
        ("2026-08-21 10:00:00 INFO checkpoint", False),  # _RAY_DRIVER's
        ("(A pid=1) checkpoint \x1b[1mx", False),  # _peel changes it
        ("(A pid=1, ip=1.2.3.4) checkpoint", True),  # a worker on another node: pid 1@1.2.3.4
        ("(A pid=1, node=2) checkpoint", False),  # not a prefix _RAY reads
        ("checkpoint x [repeated 2x across cluster]", True),  # Ray's mark: _peel cuts it off
        (
            "\x1b[36m(SGLangEngine pid=48099)\x1b[0m Loading checkpoint shards: 100%|##| 4/4 [00:08<00:00]"
            "\x1b[32m [repeated 7x across cluster]\x1b[0m",
            True,
        ),
        ("(A pid=1) Loading checkpoint shards \u2026 3/4 [repeated 7x across cluster]", True),
        ("(A pid=1) saving checkpoint at iteration 3 [repeated 7x across cluster]", False),  # an event
        ("(A pid=1) checkpoint x [repeated 7x across cluster] (Ray deduplicates logs by default.)", False),
        ("(A pid=1) checkpoint \x1b[1mx [repeated 7x across cluster]", False),  # _peel changes it
        ("checkpoint\x00", False),
        ("(A pid=1) engine config: {'tp': 2, 'mem_fraction': 0.8}", True),  # a dict no record is read from
        ("(A pid=1) UserWarning: step 3 of {'a': 1}", True),
        ("(A pid=1) see rollout 3: {'a': 1}", False),  # _METRIC_ANY finds one anywhere
        ("(A pid=1) rollout -3: {'a': 1}", False),
        ("(A pid=1) x-passrate 12: ... 'a': 1", False),
        ("(A pid=1) step \u0663: {'a': 1}", False),  # \d is Unicode
        ("(A pid=1) step 3\u0663: {'a': 1}", False),
        ("(A pid=1) rollout 3: \u2026 'a': 1", False),
        ("(A pid=1) rollout3: {'a': 1}", True),  # no blank: no record
    ],
)
def test_scanner_header_less_noise_comes_quiet(line, quiet):
    """A header-less candidate the scanner finds noise for sure comes as a quiet head
    (LineParser._feed_quiet: _rejoin and _catch_up only), anything else as no head; either way
    _feed_head does what feed does, a record open or not, its source's skipped lines read."""
    h = _scan.scan(line.encode())[4][0]
    assert (h is not None and h[_parse_mod._H_CLASS] == _parse_mod._HEAD_QUIET) == quiet
    for open_record in (True, False):
        assert _quiet_or_feed(line, True, open_record) == _quiet_or_feed(line, False, open_record)


def _quiet_or_feed(line: str, fast: bool, open_record: bool):
    p = LineParser()
    p._scan = _scan
    p.feed("[2026-08-21 09:00:00.000 main] x.py:1 - start")
    for raw in (
        "(A pid=1) [2026-08-21 08:00:00] noise",
        "(A pid=1) [2026-08-21 08:00:01] more",
        "[2026-08-21 08:00:02] x",
    ):
        p.feed(raw)
        p._remember_skipped(raw)
    if open_record:
        p.feed("(A pid=1) [2026-08-21 09:00:01.000 a] l.py:2 - rollout 1: {'a': 1,")
    heads = _scan.scan(line.encode("utf-8", "surrogatepass"))[4]
    h = heads[0] if heads else None
    p.items = p._feed_head(line, h) if fast and h is not None else p.feed(line)
    p.items += p.flush()
    return _state(p) + (p._last_error, p._cur_key)


@FUZZ
@given(
    st.sampled_from(_FOLD_PREFIXES + ["(A pid=1)", "(pid=1) ", "\x1b[1;36m(A pid=1)\x1b[m "]),
    st.sampled_from(_QUIET_TEXTS),
    st.text(st.sampled_from(list("ab :{}'.\u2026-\t[]()0")), max_size=12),
    st.booleans(),
)
def test_scanner_quiet_heads_are_feed(prefix, text, tail, open_record):
    line = prefix + text + tail
    h = _scan.scan(line.encode("utf-8", "surrogatepass"))[4]
    if (
        h
        and h[0] is not None
        and len(h[0]) == _parse_mod._H_COUNT
        and h[0][_parse_mod._H_CLASS] == _parse_mod._HEAD_QUIET
    ):
        assert _quiet_or_feed(line, True, open_record) == _quiet_or_feed(line, False, open_record), line


@pytest.mark.parametrize(
    "before, alone",
    [
        ("(B pid=2) [2026-08-21 10:00:00] Decode batch", True),  # another source's pid
        ("\x1b[36m(B pid=2)\x1b[0m [2026-08-21 10:00:00] x", True),
        ("plain text", True),  # no pid at all
        ("", True),
        ("(A pid=1) [2026-08-21 10:00:00] Decode batch", False),  # the same pid: _rejoin reads on
        ("\x1b[36m(A pid=1)\x1b[0m more", False),
        ("(C pid=1) x", False),  # another actor, the same pid
        ("  (B pid=2) x", False),  # an indented prefix _peel_any finds
        ("(B pid=2, ip=1.2.3.4) x", True),  # pid 2@1.2.3.4
        ("(A pid=1, ip=1.2.3.4) x", True),  # pid 1@1.2.3.4, not 1
        ("(B pid=2, node=1) x", False),  # a prefix the scanner does not read
        ("(B pid=2) x \x00", False),  # feed may find it unreadable
    ],
)
def test_scanner_quiet_heads_know_when_rejoin_gives_up(before, alone):
    """A quiet head after another source's line says _rejoin gives up at once (it stops at the
    newest noise line, the line before, when its pid differs); the parse is the same either way."""
    line = "(A pid=1) Loading checkpoint shards: 100%|##| 4/4"
    heads = _scan.scan((before + "\n" + line).encode("utf-8", "surrogatepass"))[4]
    h = heads[-1]
    assert h is not None and h[_parse_mod._H_CLASS] == _parse_mod._HEAD_QUIET
    assert (h[22] == 1) == alone  # (_scan.c: H_ID)
    assert_same([[before, line]])
    assert_same([["(A pid=1) [2026-08-21 10:00:00] x.py:1 - rollout 3:", before, line]])


@pytest.mark.parametrize(
    "prefix, pid",
    [
        ("\x1b[36m(SGLangEngine pid=48101, ip=10.0.0.6)\x1b[0m ", "48101@10.0.0.6"),
        ("(MegatronTrainRayActor pid=7, ip=10.0.0.6) ", "7@10.0.0.6"),
        ("(A pid=7) ", "7"),
    ],
)
def test_scanner_heads_of_workers_on_other_nodes_carry_pid_at_ip(prefix, pid):
    """Ray names a worker on another node `pid=N, ip=X`; _peel calls it `N@X`: so does every
    head the scanner makes (metric, ft, noise for sure, quiet), and they parse as feed does."""
    lines = [
        prefix + "[2026-08-21 10:00:00.000 main] x.py:1 - rollout 3: {'a': 1}",
        prefix + "[2026-08-21 10:00:01.000 main] g.py:1 - ft op=update_weights phase=end rollout=3 ok=true",
        prefix + "[2026-08-21 10:00:02.000 main] m.py:1 - Memory: {'gpu': '0'} Error",
        prefix + "[2026-08-21 10:00:03] Decode batch (global step: 3)",
        prefix + "Loading checkpoint shards: 100%|##| 4/4",
    ]
    heads = _scan.scan("\n".join(lines).encode())[4]
    assert all(h is not None for h in heads)
    assert heads[0][1] == pid and heads[1][1] == pid  # ready heads: (key, pid, ...)
    p = assert_same([lines])
    assert p._last_time[pid][0] == "2026-08-21 10:00:03" and p._last_error[pid].startswith("Memory")
    for line in lines:
        for open_record in (True, False):
            assert _quiet_or_feed(line, True, open_record) == _quiet_or_feed(line, False, open_record)


# -- quiet lines the walk reads itself (_scan.c: quiet_fold, own_header; Fold.run) -----------------

_START = "[2026-08-21 10:00:00.000 main] x.py:1 - start"
_QUIET_A = "(A pid=1) Loading checkpoint shards: 100%|#| 4/4"


def _python_reads(monkeypatch, lines) -> tuple[LineParser, int]:
    """The accelerated parse of one block (assert_same's), and how many lines Python's feed or
    _feed_quiet read after the start (the rest the scanner and Fold.run read)."""
    calls = [0]
    for name in ("feed", "_feed_quiet"):
        real = getattr(LineParser, name)

        def counted(self, raw, *a, _real=real, **k):
            calls[0] += raw != _START
            return _real(self, raw, *a, **k)

        monkeypatch.setattr(LineParser, name, counted)
    p = _parse([lines], True)
    monkeypatch.undo()
    return p, calls[0]


def test_walk_reads_a_quiet_line_and_pops_its_sources_skipped_lines(monkeypatch):
    """A quiet line whose _rejoin gives up at once (the line before is another source's) and whose
    source's newest skipped line has a header is read by Fold.run: _catch_up's time from that
    line, the deque popped (a later header-less line of that source must not find the older time
    after a newer header of the same pid under another key)."""
    lines = [
        _START,
        "(A pid=1) [2026-08-21 10:00:01] Decode batch",
        "(B pid=2) [2026-08-21 10:00:02] Decode batch",
        _QUIET_A,
        "\x1b[36m(A pid=1)\x1b[0m [2026-08-21 10:00:05] Decode batch (global step: 3)",
        "(A pid=1) rollout 3: {'a': 1}",
    ]
    p, python = _python_reads(monkeypatch, lines)
    assert python == 1  # the header-less record alone
    assert p.items[0].time == "2026-08-21 10:00:05"  # the newer header's, not the popped line's
    assert_same([lines])
    assert_same(_cut(lines, [1, 2]))


@pytest.mark.parametrize(
    "before, python",
    [
        ("(A pid=1) [2026-08-21 10:00:01] Decode batch", 0),  # a header: read by the walk
        ("(A pid=1) [2026-08-21 10:00:01.250 main] x.py:1 - more", 0),  # Miles' header
        ("(A pid=1) [not a date] Decode batch", 1),  # stamped, no header: Python reads on
        ("(A pid=1) [2026-13-01 10:00:01] Decode batch", 1),  # a date _fast_ts refuses
        ("> (A pid=1) [2026-08-21 10:00:01] Decode batch", 1),  # a key only Python works out
        ("(A pid=1) retrying... (attempt 1/3)", 1),  # it pops A's deque: nothing to read
        ("(C pid=3) retrying... (attempt 1/3)", 2),  # it may touch any deque: not known
    ],
)
def test_walk_reads_a_quiet_line_only_when_its_catch_up_is_known(monkeypatch, before, python):
    lines = [
        _START,
        "(A pid=1) [2026-08-21 09:59:00] Decode batch",
        before,
        "(B pid=2) [2026-08-21 10:00:02] Decode batch",
        _QUIET_A,
        "(B pid=2) [2026-08-21 10:00:03] x",
    ]
    _, got = _python_reads(monkeypatch, lines)
    assert got == python
    assert_same([lines])
    assert_same(_cut(lines, [2, 1]))


def test_walk_reads_quiet_lines_between_short_runs(monkeypatch):
    """Quiet lines and short noise runs in turn: the walk carries the noise run's tail over them
    (one stretch), so neither stops it; the run read by _rejoin after them is the same."""
    lines = [_START]
    for i in range(40):
        a, b = f"(A pid=1) [2026-08-21 10:00:{i:02d}] x", f"(B pid=2) [2026-08-21 10:00:{i:02d}] Decode batch"
        lines += [b, a, "(B pid=2) Loading checkpoint shards: 100%|#| 4/4"] if i % 2 else [a, b, _QUIET_A]
    lines += ["(A pid=1) [2026-08-21 10:01:00] x.py:1 - rollout", "(A pid=1)  3: {'a': 1}"]  # rejoined
    p, python = _python_reads(monkeypatch, lines)
    assert python <= 2 and p.counts.records == 1
    assert_same([lines])
    assert_same(_cut(lines, [5, 3, 40]))


_OWN_STAMPS = st.integers(0, 59).map(lambda s: f"2026-08-21 10:00:{s:02d}")


@st.composite
def _own_lines(draw):
    """Lines around quiet ones: stamped lines of their source (with a header or not), of other
    sources and keys with the same pid, noise heads (plain now: ' ...'), header-less records and
    events that read a source's time, records left open, pasted keys, unreadable lines."""
    t = draw(_OWN_STAMPS)
    src = draw(st.sampled_from(["(A pid=1) ", "\x1b[36m(A pid=1)\x1b[0m ", "(B pid=2) ", "", "(A pid=1, ip=1.2.3.4) "]))
    return draw(
        st.sampled_from(
            [
                f"{src}[{t}] Decode batch",
                f"{src}[{t}.500 main] x.py:1 - hello",
                f"{src}[{t}] Loading checkpoint shards ... 1/4",
                f"{src}[{t} a] l.py:2 - Loading checkpoint shards ... done",
                f"{src}[no date] x",
                f"{src}[{t}]x",
                src + "Loading checkpoint shards: 100%|#| 4/4",
                src + "wandb sync done",
                src + "rollout 3: {'a': 1}",
                src + "retrying... (attempt 1/3)",
                f"{src}[{t} a] l.py:2 - rollout 1: {{'a': 1,",
                src + " 'b': 2}",
                f"> {src}[{t}] Decode batch",
                src + "x\x00",
                "plain text",
                f"{src}[{t} a] l.py:2 - step 2: {{'a': 1}}",
            ]
        )
    )


@FUZZ
@given(st.lists(_own_lines(), min_size=1, max_size=30), st.lists(st.integers(1, 12), max_size=4))
def test_walk_reads_quiet_lines_as_feed_does(lines, cuts):
    lines = [_START] + lines
    assert_same([lines])
    assert_same(_cut(lines, cuts))
    assert_run_same([lines])


@pytest.mark.parametrize(
    "lines",
    [
        # _rejoin joins a quiet line to its own source's noise before it: Python's (not alone)
        [
            _START,
            "(B pid=2) [2026-08-21 10:00:01] x",
            "(A pid=1) [2026-08-21 10:00:02] x.py:1 - rollout 3: ",
            "(A pid=1) {'a': 1}",
        ],
        [
            _START,
            "(A pid=1) [2026-08-21 10:00:01.000 a] x.py:1 - rollout 2: {'a': 1}",
            "(A pid=1) [2026-08-21 10:00:02] x.py:1 - rollout 3: ",
            "(A pid=1) {'a': 1}",
        ],
        [_START, "[2026-08-21 10:00:02] x.py:1 - rollout 3: ", "{'a': 1}"],
        ["[2026-08-21 10:00:00.000 main] x.py:1 - rollout 3: ", "{'a': 1} checkpoint"],  # a run Python pushed
        [
            _START,
            "(A pid=1) [2026-08-21 10:00:01.000 a] x.py:1 - rollout 2: {'a': 1}",  # the quiet line's own
            "(A pid=1) [2026-08-21 10:00:02] x.py:1 - rollout 3",
            "(A pid=1) : {'a': 1} checkpoint",
        ],  # `: {` ends it
        [
            _START,
            "(A pid=1) [2026-08-21 10:00:01.000 a] x.py:1 - rollout 2: {'a': 1}",  # _peel cuts the dedup mark:
            "(A pid=1) [2026-08-21 10:00:02] x.py:1 - rollout 3: .. [repeated 2x across cluster]",  # `rollout 3: ..`
            "(A pid=1) . 'a': 1 checkpoint",
        ],  # + `. 'a': 1`
        # a record left open reads every source's skipped lines: its opener ends every window
        [
            _START,
            "(A pid=1) [2026-08-21 10:00:01] Decode batch",
            "(B pid=2) [2026-08-21 10:00:02.000 a] l.py:2 - rollout 1: {'a': 1,",
            "(A pid=1) plain words",
            "(A pid=1) rollout 3: {'a': 1}",
        ],
    ],
)
def test_walk_leaves_quiet_lines_python_must_read(lines):
    p = assert_same([lines])
    assert p.counts.records >= 1
    assert_same(_cut(lines, [2, 1]))
    assert_run_same([lines])


_JOIN_PIECES = [
    "(A pid=1) [2026-08-21 10:00:01] x.py:1 - rollout 3",
    "(A pid=1) [2026-08-21 10:00:01] x.py:1 - rollout 3:",
    "(A pid=1) [2026-08-21 10:00:01] x.py:1 - rollout 3: ",
    "(A pid=1) [2026-08-21 10:00:01] x.py:1 - rollout 3: .",
    "(A pid=1) [2026-08-21 10:00:01] x.py:1 - rollout 3: ..",
    "(A pid=1) [2026-08",
    "(A pid=1) -21 10:00:01] x.py:1 - ",
    "(A pid=1) rollout 3: ",
    "(A pid=1) rollout",
    "(A pid=1)  3:",
    "(A pid=1) [2026-08-21 10:00:01] Decode batch",
    "(A pid=1) [2026-08-21 10:00:01] a: b",
    "(A pid=1) [2026-08-21 10:00:01] a:\tb",
    "(A pid=1) a\x1b[1m: ",
    "(A pid=1) [2026-08-21 10:00:01] x [repeated 2x across cluster]",
    "(A pid=1) [2026-08-21 10:00:01] x.py:1 - rollout 3: .. [repeated 2x across cluster]",
    "\x1b[36m(A pid=1)\x1b[0m rollout 3: ",
    "(B pid=2) [2026-08-21 10:00:01] x",
    "[2026-08-21 10:00:01] x.py:1 - rollout 3: ",
    "",
    "(A pid=1) ",
]
_JOIN_TAILS = [
    "{'a': 1} checkpoint",
    ": {'a': 1} checkpoint",
    "3: {'a': 1} checkpoint",
    "x: {'a': 1}",
    ".. 'a': 1 checkpoint",
    ". 'a': 1 checkpoint",
    "\u2026 'a': 1} checkpoint",
    "{'a': 1}",
    "x checkpoint",
    "3: {'a': 1} wandb",
    "{'rollout/raw_reward': 0.5}",
]


@FUZZ
@given(
    st.lists(st.sampled_from(_JOIN_PIECES), max_size=10),
    st.sampled_from(["(A pid=1) ", "", "\x1b[36m(A pid=1)\x1b[0m "]),
    st.sampled_from(_JOIN_TAILS),
    st.booleans(),
)
def test_walk_reads_quiet_lines_only_where_rejoin_gives_up(pieces, prefix, tail, head_first):
    """A quiet line after its own source's noise: the walk reads it only where no join _rejoin
    tries can hold a metric message (_scan.c: rejoin_fails), else Python joins it as feed does."""
    lines = [_START] + (["(A pid=1) [2026-08-21 10:00:00.000 a] l.py:2 - rollout 1: {'a': 1}"] if head_first else [])
    lines += pieces + [prefix + tail, "(A pid=1) rollout 9: {'b': 2}"]
    assert_same([lines])
    assert_same(_cut(lines, [len(lines) - 2, 1]))
    assert_run_same([lines])


@pytest.mark.parametrize(
    "line, ckpt",
    [
        ("saving checkpoint at iteration      19 to /c in torch_dist format", True),
        ("(A pid=1) saving checkpoint at iteration 19", True),
        ("\x1b[36m(A pid=1)\x1b[0m   successfully saved checkpoint from iteration 19 to /c [ t 1/1, p 1/1 ]", True),
        ("(A pid=1) saving checkpoint iteration 3", True),  # (?:from |at )? left out
        ("(A pid=1) saving checkpoint at iteration 99999999999999999", True),  # bounded_int: None
        ("(A pid=1) saving checkpoint at iteration 3, W&B mode enabled", True),  # W&B's branch comes after
        ("(A pid=1) x saving checkpoint at  iteration 3", False),  # no _CKPT match: noise
        ("(A pid=1) saving checkpoint at iteration", False),
        ("(A pid=1) saving checkpoint at iteration \uff13", False),  # \d is Unicode: Python's
        ("(A pid=1) saving checkpoint at iteration\u00a03", False),  # \s too
        ("(A pid=1) Traceback (most recent call last) saving checkpoint at iteration 3", False),
        ("(A pid=1) retrying... saving checkpoint at iteration 3", False),
        ("(A pid=1) Job 'j' saving checkpoint at iteration 3", False),
        ("(A pid=1) Watchdog caught collective operation timeout; saving checkpoint at iteration 3", False),
        ("(A pid=1) CUDA out of memory, saving checkpoint at iteration 3", False),
        ("(A pid=1) ft saving checkpoint at iteration 3", False),  # _ft_event's
        ("(A pid=1)  ft saving checkpoint at iteration 3", False),
        ("(A pid=1) EXEC: saving checkpoint at iteration 3", False),
        ("(A pid=1) see train.py --x saving checkpoint at iteration 3", False),  # the launch line's
        ("  saving checkpoint at iteration 3", False),  # no prefix: _peel_any's indent
        ("(A pid=1) [2026-08-21 10:00:00] saving checkpoint at iteration 3", False),  # a header: not quiet
        ("(A pid=1) saving checkpoint at iteration 3 [repeated 2x across cluster]", True),  # the mark cut off
        (
            "\x1b[36m(A pid=1)\x1b[0m saving checkpoint at iteration 3 to /c\x1b[32m [repeated 7x across cluster]\x1b[0m",
            True,
        ),
    ],
)
def test_scanner_header_less_checkpoints_come_as_events(line, ckpt):
    """A header-less checkpoint line (Megatron's `saving checkpoint at iteration N`, logged without
    a header at each save) comes as a HEAD_CKPT head, which Fold.run reads into its event (the
    source's newest time, as _headerless gives it); anything else as it came before.  Read one by
    one (_feed_head: feed) or in a walk, the parse is feed's."""
    h = _scan.scan(line.encode("utf-8", "surrogatepass"))[4][0]
    assert (h is not None and h[_parse_mod._H_CLASS] == _parse_mod._HEAD_CKPT) == ckpt
    for open_record in (True, False):
        assert _quiet_or_feed(line, True, open_record) == _quiet_or_feed(line, False, open_record)
    assert_same(
        [
            [
                "(A pid=1) [2026-08-21 10:00:00.000 a] m.py:41 - [Rank 0] Memory-Usage: {'gpu': '0'}",
                "(A pid=1) [2026-08-21 10:00:01.000 a] t.py:31 - Timer save_model start",
                line,
            ]
        ]
    )


_SAVE = [
    "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m [2026-08-21 10:34:37.043 actor_cell0_rank0] memory_utils.py:41"
    " - [Rank 0] Memory-Usage before offload model: {'gpu': '0', 'total_GB': 79.19}",
    "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m [2026-08-21 10:34:39.951 actor_cell0_rank0] timer.py:31"
    " - Timer save_model start",
    "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m saving checkpoint at iteration      19 to /c in torch_dist format",
    "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m   successfully saved checkpoint from iteration      19 to /c"
    " [ t 1/1, p 1/1 ]",
    "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m [2026-08-21 10:34:45.951 actor_cell0_rank0] timer.py:42"
    " - Timer save_model end (elapsed: 6.0s)",
]


_MEG = "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m "


@pytest.mark.parametrize(
    "before, python_reads",
    [
        ([], False),
        (["(B pid=2) [2026-08-21 10:34:38] Decode batch"], False),  # another source's stamped line
        ([_MEG + "[2026-08-21 10:34:39.500] Decode batch"], False),  # its own: skipped, _catch_up reads it
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - Timer x"], False),  # a message no metric line starts as
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - [r] rollout 3: {'a':"], False),
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - rollout 3: {'a':"], True),  # joined, a metric line may come
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - rollout 3:"], True),
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - actor-step 3: {'a':"], True),
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - actor-ste"], True),  # the line ends inside a kind
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - rollo"], True),
        ([_MEG + "[2026-08-21 10:34:39 a] x.py:1 - r\u00f4le-step 3: {'a':"], True),  # \w is Unicode
        # another source's record left open: Python reads the next lines (the header line closes it),
        # and the walk that follows does not see the noise run Python began
        (["(A pid=9) [2026-08-21 10:34:39 a] x.py:1 - rollout 3: {'a':"], True),
        (["(A pid=9) [2026-08-21 10:34:39 a] x.py:1 - rollout 3: {'a': 1}"], False),
    ],
)
@pytest.mark.parametrize("lean", [False, True])
def test_checkpoint_lines_are_read_in_the_walk(before, python_reads, lean, monkeypatch):
    """A save as Megatron logs it (sample_logs: a `: {` header line, then two header-less
    checkpoint lines): the walk (Fold.run) makes their events, _rejoin known to give up there
    (rejoin_fails: the `[Rank 0] Memory-Usage ...: {` header's message can't start a metric
    line); where a join may make a metric line (a wrapped `rollout 3: {` header of the same
    source before them), Python reads them.  The parse is the pure one, whole and cut anywhere."""
    head = [
        "[2026-08-21 10:34:30.000 main] x.py:1 - start",
        "\x1b[36m(MegatronTrainRayActor pid=48479)\x1b[0m [2026-08-21 10:34:36.453 a] l.py:542 - step 19: {'a': 1}",
    ]
    lines = head + before + _SAVE
    fed = []
    real_feed = LineParser.feed
    monkeypatch.setattr(LineParser, "feed", lambda self, raw: fed.append(raw) or real_feed(self, raw))
    fast = assert_same([lines], lean)
    for k in range(1, len(lines)):
        assert_same([lines[:k], lines[k:]], lean)
    ckpt = [x for x in fast.items if getattr(x, "kind", "").startswith("checkpoint")]
    assert [x.kind for x in ckpt] == ([] if lean else ["checkpoint_start", "checkpoint_saved"])
    fed.clear()
    _parse([lines], True, lean)
    assert any("checkpoint" in raw for raw in fed) == python_reads
    if not lean:
        want = "2026-08-21 10:34:39.951"  # the source's newest time: the header line before
        assert [x.time for x in ckpt] == [want, want]


# -- Fold.run's books on quiet heads: what the walk hands over of a quiet head's own line (H_O_*),
# and the skipped-line deques it empties and makes again (dq_new, skipped_drop).  The parse itself
# is compared with the pure reader above; these look at the two shortcuts behind it.

H_OWN, H_CLASS, HEAD_QUIET = 25, 18, 4
H_O_PID, H_O_PID_END, H_O_DATE, H_O_MS, H_O_TIME_END, H_O_DAYS, H_O_SOD, H_O_MSV = range(28, 36)


def _actor_lines(rounds: int, pids=(48106, 48099)) -> list[str]:
    """Per round: another source's nine lines, then per source a stamped noise line and a quiet
    head (a header-less line under its Ray prefix that names an anchor: tqdm's checkpoint
    shards), as SGLang engines log them while loading weights.  A quiet head's line before is
    another source's (the walk knows _rejoin gives up); its own source's newest line two back."""
    noise, quiet = [], []
    for i in range(rounds):
        for r, pid in enumerate(pids):
            ms = "" if r == 0 else f".{100 + i % 900:03d}"
            noise.append(
                f"\x1b[36m(SGLangEngine pid={pid})\x1b[0m [2026-08-21 09:{10 + i % 40:02d}:{r + 10:02d}{ms}]"
                f' INFO:     10.0.0.5:49194 - "GET /health HTTP/1.1" 200 OK'
            )
            quiet.append(
                f"\x1b[36m(SGLangEngine pid={pid})\x1b[0m Loading checkpoint shards: 100%|##########| 4/4"
                f" [00:08<00:00, 1.2it/s]"
            )
    out = []
    for i in range(0, len(noise), len(pids)):  # (a long noise run between rounds: the walk's own)
        out += [
            f"\x1b[36m(SGLangEngine pid=48101)\x1b[0m [2026-08-21 09:{10 + i % 40:02d}:20] Decode batch, "
            f"#running-req: {k}, #token: 622, token usage: 0.02"
            for k in range(9)
        ]
        out += noise[i : i + len(pids)] + quiet[i : i + len(pids)]
    return out


def test_scanner_quiet_head_brings_its_own_lines_header():
    lines = _actor_lines(30)
    n, cands, _keep, _starts, heads, _lasts = _scan.scan("\n".join(lines).encode())
    owned = [
        (c, h)
        for c, h in zip(cands, heads)
        if isinstance(h, tuple) and len(h) == _parse_mod._H_COUNT and h[H_CLASS] == HEAD_QUIET and h[H_OWN] >= 0
    ]
    assert len(owned) >= 50  # (each head after its source's noise line)
    for c, h in owned:
        own = lines[h[H_OWN]]
        assert h[H_OWN] == c - 2 and "GET /health" in own
        assert own[h[H_O_PID] : h[H_O_PID_END]] == own.split("pid=")[1].split(")")[0]
        text = own[h[H_O_DATE] : h[H_O_TIME_END]]
        date, time = text[:10], text[11:19]
        assert text.startswith("2026-08-21 09:") and own[h[H_O_DATE] - 1] == "["
        assert (h[H_O_MS] < 0) == (len(text) == 19)
        want = _patterns._fast_ts(date, time, text[20:] or None)
        assert h[H_O_DAYS] * 86400 + h[H_O_SOD] + h[H_O_MSV] / 1000 == pytest.approx(want, abs=1e-6)


def _fed_accel(blocks) -> LineParser:
    """A parser fed as a file is read: blocks of bytes through the scanner's fold (Fold.run)."""
    p = LineParser(accel=True)
    p._scan = _scan
    p._ready_run = True
    for lines in blocks:
        p.feed_block(_block(lines))
    return p


def _block(lines) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def test_scanner_deque_held_elsewhere_is_not_emptied_for_reuse():
    lines = _actor_lines(40)
    p = _fed_accel([lines[:-3]])  # ends on A's noise line: A's deque holds it
    key, dq = next((k, d) for k, d in p._skipped.items() if "pid=48106" in k)
    before = list(dq)
    assert len(before) == 1
    python_quiet = []
    real = LineParser._feed_quiet
    LineParser._feed_quiet = lambda self, *a, **k: python_quiet.append(1) or real(self, *a, **k)
    try:
        p.feed_block(_block(lines[-13:]))  # the round again: A's quiet head pops A's deque in the walk
    finally:
        LineParser._feed_quiet = real
    assert not python_quiet  # (the walk's own: Fold.run, not Python)
    assert list(dq) == before + [lines[-4]]  # ours still, its new line in: not emptied into the pool
    assert p._skipped.get(key) is not dq


def test_scanner_deques_made_again_are_like_new_ones():
    lines = _actor_lines(60)
    p = _fed_accel([lines, lines, lines[:-1]])  # ends on a noise line: one source keeps it
    assert p._skipped
    for dq in p._skipped.values():
        assert type(dq) is deque and dq.maxlen == _parse_mod._SKIPPED_PER_SOURCE
    assert [len(dq) for key, dq in p._skipped.items() if "pid=48101" not in key] == [1]  # since its last head


def _burst_lines(seed: int, n: int) -> list[str]:
    """tqdm lines (quiet heads) among engine lines, short runs between them, from a few sources,
    now and then a record, a long run, a line of another shape: what keeps a noise tail unread
    from one Fold.run to the next (LineParser._tail_here)."""
    rnd = random.Random(seed)
    out = ["[2026-08-21 10:00:00.000 main] l.py:1 - start"]
    for i in range(n):
        pid = 48100 + rnd.randrange(3)
        pre = f"\x1b[36m(SGLangEngine pid={pid})\x1b[0m "
        s = f"{10 + i // 600 % 40:02d}:{i // 10 % 60:02d}"
        roll = rnd.random()
        if roll < 0.45:
            out.append(pre + f"[2026-08-21 10:{s}{rnd.choice(['', '.123'])}] Decode batch, #running-req: {i % 7}")
        elif roll < 0.9:
            out.append(pre + f"Loading checkpoint shards: {i % 100}%|#####     | 2/4 [00:04<00:04, 1.2it/s]")
        elif roll < 0.93:
            out.append(f"(A pid=1) [2026-08-21 10:{s}.000 a] l.py:2 - rollout {i}: {{'a': {i}}}")
        elif roll < 0.96:
            out += [pre + f"[2026-08-21 10:{s}] INFO: GET /health {k}" for k in range(rnd.randrange(1, 12))]
        else:
            out.append(
                rnd.choice(
                    [
                        pre + "Traceback (most recent call last):",
                        pre + "tail: {'x': 1,",
                        "plain text",
                        pre + "[2026-08-21 10:00:00] x.py:1 - step 3: {'a': 1}",
                        pre + "\r",
                    ]
                )
            )
    return out


def _python_quiet_heads(blocks, tail_here=None) -> tuple[LineParser, int]:
    """The parser fed these blocks through the walk, and how many quiet heads Python's loop read
    (`tail_here`: LineParser._tail_here replaced, e.g. by one that never finds the tail)."""
    calls = []
    real_quiet, real_tail = LineParser._feed_quiet, LineParser._tail_here
    LineParser._feed_quiet = lambda self, *a, **k: calls.append(1) or real_quiet(self, *a, **k)
    if tail_here is not None:
        LineParser._tail_here = tail_here
    try:
        return _fed_accel(blocks), len(calls)
    finally:
        LineParser._feed_quiet, LineParser._tail_here = real_quiet, real_tail


@pytest.mark.parametrize("seed", range(8))
def test_scanner_quiet_bursts_stay_in_the_walk(seed):
    lines = _burst_lines(seed, 3000)
    rnd = random.Random(seed)
    cuts, at = [], 0
    while at < len(lines):
        k = rnd.choice([1, 7, 50, 333, 1000])
        cuts.append(lines[at : at + k])
        at += k
    ref = LineParser(accel=False)
    for part in cuts:
        ref.feed_block(_block(part))
    p, _ = _python_quiet_heads(cuts)
    p.items = ref.items = []  # (neither keeps its items: the books and counts are compared)
    assert _state(p)[1:] == _state(ref)[1:]
    blocks = [lines[a : a + 1000] for a in range(0, len(lines), 1000)]
    _, now = _python_quiet_heads(blocks)
    _, before = _python_quiet_heads(blocks, lambda self, *a: (-1, False))
    assert now < 0.6 * before  # (8 seeds: 1,014 against 2,361 of 10,799 quiet heads)


def test_scanner_tqdm_burst_stays_in_the_walk():
    """/tmp/burst.log's shape (each engine line followed, every other one, by a tqdm line of its
    own source): before, nearly every quiet head after the first block went to Python."""
    lines = ["[2026-08-21 10:00:00.000 main] l.py:1 - start"]
    for i in range(6000):
        pre = f"\x1b[36m(SGLangEngine pid={48100 + i % 8})\x1b[0m "
        lines.append(
            pre + f"[2026-08-21 12:{10 + i // 600:02d}:{i // 10 % 60:02d}] Decode batch, #running-req: 1, "
            "#token: 622, cuda graph: True, #queue-req: 0"
        )
        if i % 2 == 0:
            lines.append(pre + f"Loading checkpoint shards: {i % 100}%|#####     | 2/4 [00:04<00:04, 1.2it/s]")
    blocks = [lines[a : a + 2000] for a in range(0, len(lines), 2000)]
    p, now = _python_quiet_heads(blocks)
    _, before = _python_quiet_heads(blocks, lambda self, *a: (-1, False))
    ref = LineParser(accel=False)
    for part in blocks:
        ref.feed_block(_block(part))
    p.items = ref.items = []
    assert _state(p)[1:] == _state(ref)[1:]
    assert before > 2000 and now * 50 < before  # (3,000 against 16)
