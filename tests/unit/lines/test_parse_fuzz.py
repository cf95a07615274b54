"""Hypothesis fuzzing of the parser: never raises, counts add up, complete dicts round-trip exactly."""

from __future__ import annotations

import math
import os
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from grpo_tui.lines.parse import LineParser, parse_lines
from grpo_tui.lines.records import MetricRecord
from grpo_tui.lines.values import parse_dict
from grpo_tui.pipeline import judge_path

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_counts(c) -> None:
    assert c.lines == c.metric_lines + c.event_lines + c.noise + c.unreadable
    assert min(c.metric_lines, c.event_lines, c.noise, c.unreadable) >= 0
    assert c.cut_records <= c.records and c.abridged_records <= c.records


def run(lines) -> tuple[list, object]:
    p = LineParser()
    out = []
    for ln in lines:
        out.extend(p.feed(ln))
        check_counts(p.counts)  # also true while a record is still open
    out.extend(p.flush())
    check_counts(p.counts)
    assert p.counts.lines == len(lines)
    return out, p.counts


# --------------------------------------------------------------------------------------------
# random input
# --------------------------------------------------------------------------------------------

PIECES = st.sampled_from(
    [
        "(MegatronTrainRayActor pid=1) ",
        "\x1b[36m",
        "\x1b[0m",
        "[2026-08-21 10:00:00.000 main] ",
        "[2026-08-21 10:00:00] ",
        "log_utils.py:542 - ",
        "step 6: ",
        "perf 3: ",
        "{",
        "}",
        "'a': ",
        "1.5",
        "nan",
        "np.float64(",
        ")",
        ", ",
        "...",
        "Traceback (most recent call last):",
        '  File "x", line 1',
        "ValueError: x",
        "retrying... (attempt 1/60",
        "\r",
        " [repeated 7x across cluster]",
        "ft op=execute phase=fail",
        "ok=false",
        "EXEC: ",
        "train.py --rollout-batch-size 8",
        "4933:",
        "> ",
        "\t",
        "\x00",
        "\ufffd",
        "'",
        '"',
        "\\",
        "Job 'x' failed",
        "saving checkpoint at iteration 3",
    ]
)
LINE = st.one_of(st.text(max_size=120), st.lists(PIECES, max_size=12).map("".join))


@FAST
@given(st.lists(LINE, max_size=30))
def test_random_text_never_raises_and_counts_add_up(lines):
    lines = [ln.replace("\n", " ") for ln in lines]
    run(lines)


@FAST
@given(st.binary(max_size=3000))
def test_random_bytes_file_never_raises(data):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "fuzz.log")
        with open(path, "wb") as fh:
            fh.write(data)
        loaded = judge_path(path, judging=False)
    c = loaded.parser.counts
    check_counts(c)
    assert c.lines == (data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1))


@FAST
@given(st.binary(min_size=1, max_size=200).map(lambda b: b + b"\x00"))
def test_binary_with_nul_is_unreadable(data):
    line = data.decode("utf-8", "replace").replace("\n", "")
    items, c = parse_lines([line])
    assert items == [] and c.unreadable == 1


# --------------------------------------------------------------------------------------------
# real sample lines cut at random points
# --------------------------------------------------------------------------------------------


@FAST
@given(st.data())
def test_sample_lines_cut_anywhere(sample_lines, data):
    i = data.draw(st.integers(0, len(sample_lines) - 1))
    line = sample_lines[i]
    cut = data.draw(st.integers(0, len(line)))
    lines = sample_lines[:i] + [line[:cut]] + sample_lines[i + 1 :]
    items, c = run(lines)
    # every other metric line of the sample still comes back whole
    whole = sum(
        1
        for j, ln in enumerate(sample_lines)
        if j != i
        and ": {'" in ln
        and " - " in ln
        and ("step " in ln or "perf " in ln or "rollout " in ln or "eval " in ln)
        and "Memory" not in ln
    )
    complete = [r for r in items if isinstance(r, MetricRecord) and not r.cut]
    assert len(complete) >= whole


@FAST
@given(st.data())
def test_sample_lines_split_anywhere(sample_lines, data):
    # a line split into two physical lines at any point: values of the others are unchanged
    i = data.draw(st.integers(0, len(sample_lines) - 1))
    line = sample_lines[i]
    cut = data.draw(st.integers(0, len(line)))
    lines = sample_lines[:i] + [line[:cut], line[cut:]] + sample_lines[i + 1 :]
    run(lines)


# --------------------------------------------------------------------------------------------
# mutated dicts round-trip exactly
# --------------------------------------------------------------------------------------------

SAFE = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_/.-@ ,{}'\"é"
KEYS = st.text(alphabet=SAFE, min_size=1, max_size=24)
STRS = st.text(alphabet=SAFE, max_size=20)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)


def _np(x: float) -> str:
    return f"np.float64({x!r})"


VALUE = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12).map(lambda v: (v, repr(v))),
    FLOATS.map(lambda v: (v, repr(v))),
    FLOATS.map(lambda v: (v, _np(v))),
    st.integers(-1000, 1000).map(lambda v: (v, f"np.int64({v})")),
    FLOATS.filter(math.isfinite).map(lambda v: (v, f"tensor({v!r}, device='cuda:0')")),
    STRS.map(lambda v: (v, repr(v))),
    st.sampled_from([True, False, None]).map(lambda v: (v, repr(v))),
)
DICTS = st.dictionaries(KEYS, VALUE, max_size=12)


def render(d: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {text}" for k, (_, text) in d.items()) + "}"


def same(got, exp) -> bool:
    if isinstance(exp, float) and math.isnan(exp):
        return isinstance(got, float) and math.isnan(got)
    if type(exp) is bool or exp is None:
        return got is exp
    return got == exp and type(got) is type(exp)


def check_values(got: dict, d: dict) -> None:
    assert list(got) == list(d)
    for k, (exp, _) in d.items():
        assert same(got[k], exp), (k, got[k], exp)


@settings(max_examples=300, deadline=None)
@given(DICTS)
def test_dict_round_trip(d):
    parsed = parse_dict(render(d))
    assert parsed.complete and not parsed.error
    check_values(parsed.values, d)
    for k, (exp, _) in d.items():
        if isinstance(exp, float) and not math.isfinite(exp):
            assert parsed.raw_nonfinite[k] == repr(exp)


@FAST
@given(DICTS.filter(bool), st.integers(40, 200), st.booleans())
def test_dict_line_round_trip_wrapped(d, width, ray_prefix):
    line = (
        ("(MegatronTrainRayActor pid=4) " if ray_prefix else "")
        + "[2026-08-21 10:02:58.903 actor_cell0_rank0] log_utils.py:123 - rollout 3: "
        + render(d)
    )
    items, c = run([line])
    (rec,) = [i for i in items if isinstance(i, MetricRecord)]
    assert not rec.cut and rec.kind == "rollout" and rec.n == 3
    check_values(rec.metrics, d)
    # the same line hard-wrapped at a fixed column
    chunks = [line[i : i + width] for i in range(0, len(line), width)]
    items, c = run(chunks + ["[2026-08-21 10:03:00.000 main] x.py:1 - done"])
    recs = [i for i in items if isinstance(i, MetricRecord)]
    assert len(recs) == 1
    assert not recs[0].cut
    check_values(recs[0].metrics, d)
    assert recs[0].time == "2026-08-21 10:02:58.903"
    assert c.metric_lines == len(chunks)


@FAST
@given(DICTS.filter(lambda d: len(d) >= 2), st.data())
def test_cut_dict_keeps_only_complete_pairs(d, data):
    text = render(d)
    cut = data.draw(st.integers(1, len(text) - 1))
    parsed = parse_dict(text[:cut])
    assert not parsed.complete
    # whatever was kept is a prefix of the real dict, with exact values
    keys = list(d)
    got = list(parsed.values)
    assert got == keys[: len(got)]
    for k in got:
        exp = d[k][0]
        # a string value cut exactly after its closing quote is complete; anything else must match too
        assert same(parsed.values[k], exp), (k, parsed.values[k], exp)


# --------------------------------------------------------------------------------------------
# structured hostile lines (issue #9): deep, huge, binary, unbounded
# --------------------------------------------------------------------------------------------

SIZES = st.sampled_from([0, 1, 2, 65, 3_000, 70_000])
HOSTILE_VALUE = st.one_of(
    st.sampled_from(
        [
            "1",
            "-0.5",
            "nan",
            "-nan",
            "inf",
            "-inf",
            "1e999999",
            "-1e999999",
            "np.float64(nan)",
            "np.float64(1e999)",
            "np.float64(",
            "tensor(",
            "[nan, inf, 1]",
            "'x",
            '"',
            "\\",
            "...",
            "\u2026",
            "True",
            "None",
            "{'k': 1}",
            "[",
            "(",
            ")",
            "]",
            "}",
            "{",
        ]
    ),
    st.tuples(st.sampled_from(["[", "(", "np.float64(", "{", "[f(", "'"]), SIZES).map(lambda t: t[0] * t[1]),
    st.tuples(st.sampled_from(["9", "1.", ",", " ", "\r", "\x00", "\ufffd", "\ud800", "\x1b[", "a.", "-"]), SIZES).map(
        lambda t: t[0] * t[1]
    ),
    SIZES.map(lambda n: "[" + "1, " * n + "]"),
    st.text(max_size=40),  # binary junk after 'replace' decoding
)
HOSTILE_KEY = st.one_of(
    st.sampled_from(["'a'", "'train/grad_norm'", "'k", '"it\'s"', "{'x': 1}", ""]),
    SIZES.map(lambda n: "'" + "k" * n + "'"),
)
HOSTILE_ID = st.sampled_from(
    ["0", "3", "17", "-1", str(2**53), str(2**63), "99999999999999999999", "9" * 5_000, "\uff11\uff12\uff13", "", "3.5"]
)
HOSTILE_HEAD = st.sampled_from(
    [
        "",
        "(MegatronTrainRayActor pid=1) ",
        "\x1b[36m(A pid=2)\x1b[0m ",
        "[2026-08-21 10:00:00.000 actor_cell0_rank0] log_utils.py:1 - ",
        "[2026-08-21 10:00:00] ",
        "12:",
        "> ",
        "    ",
        "\x00",
        "step:",
    ]
)


@st.composite
def hostile_line(draw) -> str:
    pairs = draw(st.lists(st.tuples(HOSTILE_KEY, HOSTILE_VALUE), max_size=4))
    body = "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + draw(st.sampled_from(["}", "", ", ...}", "}}"]))
    kind = draw(st.sampled_from(["rollout", "step", "perf", "eval", "critic-step", "eval 3 skipped:"]))
    line = draw(HOSTILE_HEAD) + f"{kind} {draw(HOSTILE_ID)}: " + body
    if draw(st.booleans()):
        line += draw(st.sampled_from([" [repeated 3x across cluster]", "\r" * 1000, " " * 5_000 + "x"]))
    return line.replace("\n", " ")


def _esc_joins_an_anchor(line: str) -> bool:
    """A known gap of the quick paths (pure and C alike): an ESC that _peel drops may join an
    anchor (`step 0: \\x1b{`); the quick paths take such a line as noise where the inline path
    reads it.  Other control bytes send the line to the full path (_CONTROL_NO_ESC); ESC can't
    (every Ray prefix has colours), so the two paths agree on everything else."""
    from grpo_tui.lines.patterns import _ANSI, _CONTROL, is_candidate

    return "\x1b" in line and not is_candidate(line) and is_candidate(_CONTROL.sub("", _ANSI.sub("", line)))


def test_an_esc_inside_an_anchor_is_the_one_known_gap():
    assert _esc_joins_an_anchor("step 0: \x1b{") and _esc_joins_an_anchor("step 0: \x1b[0m{")
    assert not _esc_joins_an_anchor("\x1b[36m(A pid=1)\x1b[0m step 0: {'a': 1}")
    assert not _esc_joins_an_anchor("step 0: \x1f{")  # sent to the full path: the paths agree


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.one_of(hostile_line(), LINE), max_size=12))
def test_structured_hostile_lines_never_raise_and_agree(lines):
    import json

    from grpo_tui.export import _jsonable
    from grpo_tui.lines.records import MAX_ID

    lines = [ln.replace("\n", " ") for ln in lines]
    items, c = run(lines)
    keys = []
    for quick, batch in ((True, True), (False, False)):
        p = LineParser(quick_reject=quick)
        got = p.feed_lines(lines) if batch else p.feed_many(lines)
        got += p.flush()
        check_counts(p.counts)
        keys.append(
            (
                [
                    (
                        type(i).__name__,
                        i.kind,
                        getattr(i, "n", None),
                        repr(getattr(i, "metrics", None)),
                        getattr(i, "nonfinite", None),
                        i.line_no,
                    )
                    for i in got
                ],
                p.counts,
            )
        )
    assert keys[0][1] == c
    if not any(_esc_joins_an_anchor(ln) for ln in lines):
        assert keys[0] == keys[1]
    for rec in items:
        if isinstance(rec, MetricRecord):
            assert 0 <= rec.n <= MAX_ID
            json.dumps(_jsonable({**rec.metrics, "\x00raw": rec.nonfinite}), allow_nan=False)


# --------------------------------------------------------------------------------------------
# _peel's short path for a coloured Ray prefix equals its general path
# --------------------------------------------------------------------------------------------

_PIECE = st.sampled_from(
    [
        "\x1b[36m",
        "\x1b[0m",
        "\x1b[1;33m",
        "\x1b[",
        "\x1b",
        "(",
        ")",
        " ",
        "pid=",
        ", ip=",
        "\r",
        "\t",
        "\x01",
        "\x7f",
        "\ufffd",
        "é",
        "Actor",
        "48479",
        "10.0.0.1",
        "[2026-08-21 10:34:36.473 a] x.py:1 - ",
        "rollout 3: {'a': 1}",
        "[repeated 7x across cluster]",
        " (Ray deduplicates logs by default.)",
        "saving checkpoint at iteration 19",
        ",",
        "m",
        "0",
    ]
)
_COLOURED = st.builds(
    lambda colour, actor, pid, ip, gap, rest: f"{colour}({actor}pid={pid}{ip}){gap}{rest}",
    st.sampled_from(["\x1b[36m"] * 4 + ["\x1b[33m", "\x1b[1;36m", "\x1b[m", "\x1b[36;1m"]),
    # Ray's own forms most of the time, then near misses (control bytes, parens, blanks)
    st.sampled_from(["MegatronTrainRayActor "] * 3 + ["", "é ", "A\x01 ", "a(b ", "x y "]),
    st.sampled_from(["48479"] * 5 + ["1\x1b", "", "1,2", "7\x7f", "9 9"]),
    st.sampled_from(["", "", ", ip=10.0.0.1", ", ip=", ", ip=a)b", ", ip=\x02"]),
    st.sampled_from(["\x1b[0m "] * 4 + ["\x1b[0m", "\x1b[0m  ", "\x1b[39m ", " "]),
    st.lists(_PIECE, max_size=6).map("".join),
)


_RAY_WRITES = st.builds(
    lambda colour, actor, ip, gap, rest: f"{colour}({actor}pid=48479{ip}){gap}{rest}",
    st.sampled_from(["\x1b[36m", "\x1b[33m", "\x1b[1;36m", "\x1b[m"]),
    st.sampled_from(["MegatronTrainRayActor ", "", "é "]),
    st.sampled_from(["", ", ip=10.0.0.1"]),
    st.sampled_from(["\x1b[0m ", "\x1b[0m", "\x1b[0m  "]),
    st.lists(_PIECE, max_size=6).map("".join),
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_RAY_WRITES, _RAY_WRITES, _COLOURED, st.lists(_PIECE, max_size=12).map("".join)))
def test_peel_short_path_equals_general_path(raw):
    """The short path for `\\x1b[36m(Actor pid=1)\\x1b[0m ...` gives the same _Line as the general one
    (ANSI taken out of the whole line, then _RAY), for prefixes that are Ray's and those that are not."""
    p = LineParser()
    assert p._peel(raw) == p._peel_any(raw)


def test_peel_short_path_taken_for_rays_colours():
    got = LineParser()._peel("\x1b[36m(MegatronTrainRayActor pid=48479, ip=10.0.0.2)\x1b[0m saving checkpoint")
    assert (got.text, got.pid, got.actor, got.has_prefix) == (
        "saving checkpoint",
        "48479@10.0.0.2",
        "MegatronTrainRayActor",
        True,
    )
