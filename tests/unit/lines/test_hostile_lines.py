"""Hostile lines (issue #9, part 2): the reading core stays bounded and never crashes.

Each test names the failure it guards.  Work bounds are checked by counting (characters
handed to the value reader, the pending buffer), never by wall-clock time.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grpo_tui.export import _json_value
from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.patterns import _PENDING_MAX, MAX_LINE, MAX_NAMES
from grpo_tui.lines.records import MetricRecord
from grpo_tui.lines.values import parse_dict

H = "[2026-08-21 10:00:00.000 actor_cell0_rank0] log_utils.py:123 - "


def run(lines, quick=True):
    """Every line through one parser (the batch fast path by default); counts must add up."""
    p = LineParser(quick_reject=quick)
    items = p.feed_lines(lines) if quick else p.feed_many(lines)
    items += p.flush()
    c = p.counts
    assert c.lines == len(lines)
    assert c.lines == c.metric_lines + c.event_lines + c.noise + c.unreadable
    return items, c


# -- long digit runs -------------------------------------------------------------------------


def test_long_digit_run_that_does_not_fit_the_fast_pattern_is_rejected_quickly():
    # `\d+\.?\d*` split a digit run in n ways: 20,000 digits followed by junk took ~26 s
    # (40,000: 87 s) inside the fast-path regex before failing.  Now one pass.
    d = parse_dict("{'a': " + "1" * 20_000 + "x}")
    assert d.error and d.values == {}


# -- huge numbers (item 2) -------------------------------------------------------------------


def _json_export(items) -> list[dict]:
    import json

    from grpo_tui.export import render
    from grpo_tui.store.metric_store import MetricStore

    store = MetricStore()
    store.add(items)
    render(store, "csv")
    return json.loads(render(store, "json"))


@pytest.mark.parametrize("digits", [400, 5_000, 200_000])
def test_int_too_long_for_float64_reads_as_marked_inf(digits):
    # 400 digits: OverflowError in the store; 5,000: ValueError (int-string limit) in the reader.
    for body in ("{'a': 1, 'b': " + "9" * digits + "}", "{'s': 'x', 'b': -" + "9" * digits + "}"):
        items, c = run([H + "rollout 3: " + body])
        (rec,) = items
        assert math.isinf(rec.metrics["b"]) and rec.nonfinite["b"].lstrip("-").startswith("9" * 20)
        assert len(rec.nonfinite["b"]) < 30  # abbreviated, not the whole token
        (row,) = _json_export(items)
        assert row["b"] is None and row["_nonfinite"]["b"] == rec.nonfinite["b"]


def test_int_that_fits_float64_stays_an_int():
    (rec,), _ = run([H + "rollout 3: {'a': " + "9" * 308 + ", 'b': " + "1" * 40 + "}"])
    assert rec.metrics == {"a": int("9" * 308), "b": int("1" * 40)} and rec.nonfinite == {}


@pytest.mark.parametrize("token,sign", [("1e999999", 1), ("-1e999999", -1), ("1E+400", 1), ("-9.9e99999", -1)])
@pytest.mark.parametrize("slow", [False, True])
def test_float_overflow_is_marked_like_inf(token, sign, slow):
    # Before: the reader's fast path turned 1e999999 into inf without marking it, so `check`
    # said OK on a run whose grad norm had overflowed.
    text = H + "step 3: {'train/grad_norm': " + token + (", 's': 'x'}" if slow else "}")
    for quick in (True, False):
        (rec,), _ = run([text], quick)
        assert rec.metrics["train/grad_norm"] == sign * math.inf
        assert rec.nonfinite == {"train/grad_norm": token}


def test_float_overflow_raises_the_non_finite_rule(tmp_path, capsys):
    import json

    from grpo_tui.cli import main

    log = tmp_path / "run.log"
    log.write_text(
        "".join(
            f"{H}step {i}: {{'train/grad_norm': {'1e999999' if i == 4 else '0.5'}, 'train/loss': 0.1}}\n"
            for i in range(5)
        )
    )
    code = main(["check", str(log), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert "non-finite" in {a["rule"] for a in out["alerts"]} and code == 2


NONFINITE_TEXT = [
    "1e999999",
    "-1e999999",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "+inf",
    "Infinity",
    "-Infinity",
    "np.float64(nan)",
    "np.float64(1e999)",
    "np.float64(-1e999)",
    "np.float32(-inf)",
    "tensor(nan, device='cuda:0')",
    "tensor(1e999)",
    "9" * 400,
    "-" + "9" * 5000,
    "[nan, inf, 1]",
    "[[1, np.float64(-inf)]]",
    "tensor([1.0, nan])",
]
OTHER_TEXT = ["0.5", "-3", "1e-06", "np.float64(0.25)", "'text'", "True", "None", "[1, 2]", "8192"]


def _key(item):
    """Everything that must agree between the paths (nan compared by its repr)."""
    return (
        type(item).__name__,
        item.kind,
        getattr(item, "n", None),
        item.time,
        item.line_no,
        repr(getattr(item, "metrics", None)),
        getattr(item, "nonfinite", None),
        getattr(item, "cut", None),
        getattr(item, "data", None),
        getattr(item, "lines", None),
    )


def _three_ways(lines):
    """feed_lines (batch fast path), feed line by line, and the full path without quick reject."""
    out = []
    for quick, batch in ((True, True), (True, False), (False, False)):
        p = LineParser(quick_reject=quick)
        items = p.feed_lines(lines) if batch else [i for ln in lines for i in p.feed(ln)]
        items += p.flush()
        out.append(([_key(i) for i in items], p.counts, items))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "(MegatronTrainRayActor pid=7) ", "(RolloutManager pid=9) "]),
            st.sampled_from([H, "[2026-08-21 10:00:01] ", "", "noise line with no anchor "]),
            st.sampled_from(["step", "rollout", "perf", "eval"]),
            st.integers(0, 50),
            st.lists(st.sampled_from(NONFINITE_TEXT + OTHER_TEXT), min_size=1, max_size=6),
        ),
        max_size=12,
    )
)
def test_nonfinite_values_agree_between_fast_and_full_paths(specs):
    lines = []
    for prefix, header, kind, n, vals in specs:
        body = "{" + ", ".join(f"'k{i}': {v}" for i, v in enumerate(vals)) + "}"
        lines.append(prefix + header + f"{kind} {n}: {body}")
        lines.append(prefix + "plain noise between records")
    (a, ca, recs), (b, cb, _), (c, cc, _) = _three_ways(lines)
    assert a == b == c and ca == cb == cc
    for rec in recs:
        if isinstance(rec, MetricRecord):
            # every non-finite float is marked, exactly as a bare `inf` would be
            bad = {k for k, v in rec.metrics.items() if _json_value(v)[1] is not None}
            assert bad == set(rec.nonfinite), (rec.metrics, rec.nonfinite)


# -- deep nesting (item 1) -------------------------------------------------------------------


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("(", ")"), ("np.float64(", ")"), ("[f(", ")]")])
@pytest.mark.parametrize("depth", [65, 5_000, 100_000])
def test_deep_nesting_is_kept_as_text_not_a_recursion_error(opener, closer, depth):
    # a value nested past the bound is kept as its text, as a nested dict is: the pairs
    # after it are read too (they used to be lost with it, the record marked cut)
    value = opener * depth + "1" + closer * depth
    line = H + "step 3: {'x': 0.5, 'a': " + value + ", 'y': 1}"
    for quick in (True, False):
        (rec,), c = run([line], quick)
        if len(line) > MAX_LINE:  # (100,000 `np.float64(`: the line itself is cut first)
            assert rec.metrics == {"x": 0.5} and rec.cut
            continue
        assert rec.metrics == {"x": 0.5, "a": value, "y": 1} and not rec.cut
        assert c.cut_records == 0 and c.unreadable == 0


@pytest.mark.parametrize("value", ["[" * 80 + "]" * 79, "[" * 80 + ")" * 80, "f(" * 70 + "1" + ")" * 69 + "]"])
def test_deep_value_that_never_closes_is_unreadable(value):
    # its brackets do not close it (the text ends, or another bracket closes one): the pairs
    # before it are kept, the record is marked cut, as for any unreadable value
    for quick in (True, False):
        (rec,), c = run([H + "step 3: {'x': 0.5, 'a': " + value + ", 'y': 1}"], quick)
        assert rec.metrics == {"x": 0.5} and rec.cut and c.cut_records == 1
        items, c = run([H + "step 3: {'a': " + value + "}"], quick)
        assert items == [] and c.unreadable == 1


def test_nesting_up_to_the_bound_is_read():
    d = parse_dict("{'a': " + "[" * 64 + "1" + "]" * 64 + ", 'b': " + "f(" * 32 + "[2]" + ")" * 32 + "}")
    assert d.complete and not d.error
    v = d.values["a"]
    for _ in range(63):
        (v,) = v
    assert v == [1] and d.values["b"] == [2]


def test_deep_nested_dict_text_is_kept_as_text():
    # nested dicts are skipped as balanced text (a loop, not recursion)
    d = parse_dict("{'a': " + "{" * 100_000 + "}" * 100_000 + ", 'b': 2}")
    assert d.complete and d.values["b"] == 2 and len(d.values["a"]) == 200_000


# -- ids (item 3) ----------------------------------------------------------------------------

BAD_IDS = ["-1", "-0", str(2**53), str(2**63), "99999999999999999999", "9" * 5_000, "\uff11\uff12\uff13", "\u0663"]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("kind", ["rollout", "step", "perf", "eval", "critic-step"])
def test_unusable_id_makes_the_line_unreadable_and_never_reaches_the_store(bad, kind):
    lines = [
        H + "rollout 1: {'a': 1}",
        H + f"{kind} {bad}: {{'a': 2}}",
        f"{kind} {bad}: {{'a': 3}}",
        f"step:{bad} - a:1 - b:2",
        H + "rollout 2: {'a': 4}",
    ]
    for quick in (True, False):
        items, c = run(lines, quick)
        assert [r.n for r in items] == [1, 2] and c.unreadable == 3
        rows = _json_export(items)
        assert [r["rollout"] for r in rows] == [1, 2]  # was a KeyError in export


def test_largest_usable_id_is_kept():
    (rec,), _ = run([H + f"rollout {2**53 - 1}: {{'a': 1}}"])
    assert rec.n == 2**53 - 1
    assert _json_export([rec])[0]["rollout"] == 2**53 - 1


@pytest.mark.parametrize(
    "line",
    [
        H + "eval {n} skipped: no data",
        H + "Error: 503 retrying... (attempt {n}/{n}, url=http://x)",
        H + "Recovered {n} dead rollout engines (worker_type=regular)",
        "  successfully saved checkpoint from iteration {n} to /x",
        H + "ft op=train phase=start rollout=3 attempt={n}",
        "(A pid=1) " + H + "rollout 3: {{'a': 1}} [repeated {n}x across cluster]",
    ],
)
def test_huge_counts_in_events_never_raise(line):
    for n in ("9" * 5_000, "\uff11\uff12", "123"):
        items, c = run([line.format(n=n)])
        assert c.unreadable == 0 and len(items) <= 1


# -- non-finite values inside lists (item 4) -------------------------------------------------


def test_nan_inside_a_list_exports_as_null_with_its_text_kept(tmp_path):
    import json

    from grpo_tui.cli import main

    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "run.log"  # outputs never go into the log's own folder
    log.write_text(
        H
        + "rollout 3: {'a': [nan, inf, 1], 'b': (1, [-inf]), 'c': [0.5], 'd': nan}\n"
        + H
        + "step 3: {'train/x': [np.float64(nan), 2]}\n"
    )
    for axis in ("rollout", "step"):
        out = tmp_path / f"{axis}.json"
        assert main(["export", str(log), "--format", "json", "--axis", axis, "-o", str(out)]) == 0
        rows = json.loads(out.read_text())
        assert rows[0]["train/x"] == [None, 2]
        assert rows[0]["_nonfinite"]["train/x"] == "[np.float64(nan), 2]"
    (row,) = json.loads((tmp_path / "rollout.json").read_text())
    assert row["a"] == [None, None, 1] and row["b"] == [1, [None]] and row["c"] == [0.5]
    assert row["_nonfinite"] == {
        "a": "[nan, inf, 1]",
        "b": "(1, [-inf])",
        "d": "nan",
        "train/x": "[np.float64(nan), 2]",
    }


def test_json_value_is_iterative():
    deep = [math.nan]
    for _ in range(100_000):
        deep = [deep]
    got, first = _json_value(deep)
    assert math.isnan(first)
    for _ in range(100_000):
        (got,) = got
    assert got == [None]
    assert _json_value({"k": (1.0, math.inf)}) == ({"k": [1.0, None]}, math.inf)
    assert _json_value("nan") == ("nan", None) and _json_value(True) == (True, None)


# -- line length (item 5) --------------------------------------------------------------------


def test_line_longer_than_the_bound_is_cut_counted_and_ends_its_record():
    pairs = "".join(f"'k{i:07d}': {i}.5, " for i in range(120_000))  # ~2.2 MB
    lines = [
        H + "rollout 1: {" + pairs + "'z': 1}",
        "  'more': 2}",
        "x" * (3 * MAX_LINE),
        H + "rollout 2: {'k0000001': 1}",
    ]
    for quick in (True, False):
        p = LineParser(quick_reject=quick)
        items = p.feed_lines(lines) if quick else p.feed_many(lines)
        items += p.flush()
        c = p.counts
        assert c.long_lines == 2 and c.lines == 4
        assert c.lines == c.metric_lines + c.event_lines + c.noise + c.unreadable
        first, second = items
        assert first.cut and "z" not in first.metrics and "more" not in first.metrics
        assert len(first.metrics) == MAX_NAMES and first.metrics["k0000000"] == 0.5
        assert second.n == 2 and not second.cut
        assert c.noise == 2  # the header-less line after the cut one stands alone
        assert all(len(raw) <= MAX_LINE for raw, _ in p._noise_run)  # what it keeps is cut too


def test_long_lines_agree_between_fast_and_full_paths():
    long_noise = "y" * (MAX_LINE + 10)
    lines = [H + "rollout 1: {'a': 1}", long_noise, long_noise + ": {", H + "rollout 2: {'a': " + "7" * MAX_LINE]
    (a, ca, _), (b, cb, _), (c, cc, _) = _three_ways(lines)
    assert a == b == c and ca == cb == cc and ca.long_lines == 3


# -- linear work on wrapped and unclosed records (item 6) -------------------------------------


class ReaderWork:
    """Characters handed to the value reader (first lines and continuations)."""

    def __init__(self, monkeypatch):
        import grpo_tui.lines.parse as parse_mod

        self.chars = 0
        for name in ("parse_dict", "parse_more"):
            real = getattr(parse_mod, name, None)
            if real is not None:
                monkeypatch.setattr(parse_mod, name, self._counting(real))

    def _counting(self, real):
        def wrapper(text):
            self.chars += len(text)
            return real(text)

        return wrapper


def _unclosed_quote_then_long_lines(total: int, width: int = 25_000) -> list[str]:
    lines = [H + "rollout 1: {'a': 0.5, 'b': 'xxx"]
    while sum(map(len, lines)) < total:
        lines.append("y" * width)
    return lines


def test_unclosed_quote_followed_by_long_lines_is_read_in_linear_work(monkeypatch):
    # Before: every line re-joined and re-read the whole open dict (10 MB took minutes).
    lines = _unclosed_quote_then_long_lines(2_000_000)
    size = sum(map(len, lines))
    work = ReaderWork(monkeypatch)
    p = LineParser()
    held = 0
    for ln in lines:
        p.feed(ln)
        pend = p._pending
        if pend is not None:
            held = max(held, pend.size, len(pend.tail))
    (rec,) = p.flush() or [None]
    assert work.chars <= 2 * size
    assert held <= _PENDING_MAX + 25_000
    c = p.counts
    assert c.lines == c.metric_lines + c.event_lines + c.noise + c.unreadable


def test_one_value_over_many_tiny_lines_is_bounded_work(monkeypatch):
    # the worst split for re-reading: a 60 KB unfinished value, then one character per line
    lines = [H + "rollout 1: {'a': 1, 'b': [" + "1, " * 20_000] + ["2,"] * 399 + ["3]}"]
    size = sum(map(len, lines))
    work = ReaderWork(monkeypatch)
    items, c = run(lines)
    (rec,) = [i for i in items if isinstance(i, MetricRecord)]
    assert rec.metrics == {"a": 1} and rec.cut
    assert work.chars <= 6 * size


@pytest.mark.parametrize("width", [100, 133, 200])  # at most 400 lines (_CONT_LIMIT_LINES)
def test_big_dict_wrapped_at_a_narrow_column_is_still_read_whole(monkeypatch, width):
    body = "{" + ", ".join(f"'eval/set{i}/pass@{k}': {i / 7!r}" for i in range(400) for k in (1, 8)) + "}"
    text = H + "eval 5: " + body
    lines = [text[i : i + width] for i in range(0, len(text), width)]
    work = ReaderWork(monkeypatch)
    items, c = run(lines)
    (rec,) = items
    assert not rec.cut and len(rec.metrics) == 800 and c.metric_lines == len(lines)
    assert work.chars <= 3 * len(text)


def test_endless_traceback_keeps_a_bounded_text():
    lines = (
        [H + "Traceback (most recent call last):"]
        + ['  File "x.py", line 1, in f' + " " * 100] * 5_000
        + ["ValueError: boom"]
    )
    items, c = run(lines)
    (tb,) = [i for i in items if i.kind == "traceback"]
    assert c.event_lines == len(lines) and tb.data["exception"] == "ValueError: boom"
    assert sum(map(len, tb.lines)) <= _PENDING_MAX + 200


# -- regexes that backtracked over long runs (item 7) ----------------------------------------
# No timing is asserted: before the fix each of these ran for minutes (100k blanks: 146 s for
# the dedup suffix, 268 s for the argument dump); now they finish with the suite.


def test_dedup_suffix_after_a_long_blank_run():
    items, c = run(
        [
            H + "x across cluster]" + " " * 300_000 + "x",
            "(A pid=1) " + H + "rollout 3: {'a': 1}" + " " * 300_000 + "[repeated 7x across cluster]   ",
        ]
    )
    (rec,) = items
    assert rec.repeated == 7 and rec.metrics == {"a": 1}


@pytest.mark.parametrize(
    "suffix,text,repeated",
    [
        (" [repeated 7x across cluster]", "msg", 7),
        (" [repeated 7x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 x.)", "msg", 7),
        ("  (Ray deduplicates logs by default. x)  ", "msg", 0),
        (" [repeated 2x across cluster] [repeated 3x across cluster]", "msg [repeated 2x across cluster]", 3),
        (" [repeated 7x across cluster] more", "msg [repeated 7x across cluster] more", 0),
        (" [repeated 99999999999999999999x across cluster]", "msg", 0),
    ],
)
def test_dedup_suffix_forms(suffix, text, repeated):
    pre = LineParser()._peel("(A pid=1) msg" + suffix)
    assert (pre.text, pre.repeated) == (text, repeated)


def test_argument_dump_value_with_a_long_blank_run():
    items, c = run(["    num_rollout ......... 3" + " " * 300_000 + "x", "    num_rollout ......... 3   "])
    assert [e.data["value"] for e in items] == ["3" + " " * 300_000 + "x", "3"]


def test_ft_line_of_one_long_word():
    items, c = run([H + "ft " + "a" * 300_000, H + "ft " + "ab " * 100_000 + "op=train phase=fail"])
    (ev,) = items
    assert ev.kind == "ft_fail" and c.event_lines == 1 and c.noise == 1


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.integers(-(10**30), 10**30), st.floats(allow_nan=True, allow_infinity=True)), max_size=30),
    st.sampled_from(["", " ", "  "]),
    st.sampled_from(["[]", "()"]),
)
def test_number_lists_round_trip(values, gap, brackets):
    text = brackets[0] + ("," + gap).join(repr(v) for v in values) + brackets[1]
    d = parse_dict("{'a': " + text + ", 'b': 1}")
    assert d.complete and not d.error and repr(d.values["a"]) == repr(values)
    bad = any(isinstance(v, float) and not math.isfinite(v) for v in values)
    assert ("a" in d.raw_nonfinite) == bad


# -- launch flags past float64 ------------------------------------------------------------------


def test_launch_flag_past_float64_does_not_crash_the_store():
    from grpo_tui.store.metric_store import MetricStore

    items, c = run(
        [
            "EXEC: python3 train.py --rollout-batch-size 1e999 --n-samples-per-prompt 8 --global-batch-size 8",
            H + "step 3: {'a': 1}",
        ]
    )
    store = MetricStore()
    store.add(items)
    assert store.current.steps_per_rollout >= 1


# -- metric names (item 7): the store keeps a dense column per name ---------------------------


def test_metric_names_past_the_bound_are_dropped_and_counted():
    many = "{" + ", ".join(f"'m{i}': {'nan' if i == 2000 else 1}" for i in range(5_000)) + "}"
    lines = [
        H + "rollout 0: {'a': 1}",
        H + "rollout 1: " + many,
        H + "rollout 2: {'a': 2, 'zz': 3}",
        "step:3 - other:1",
        H + "rollout 4: {'zz': 1}",
    ]
    for quick in (True, False):
        items, c = run(lines, quick)
        r0, r1, r2 = items
        assert len(r1.metrics) == MAX_NAMES - 1 and r1.nonfinite == {}
        assert r2.metrics == {"a": 2}
        assert c.dropped_metrics == (5_000 - MAX_NAMES + 1) + 1 + 1 + 1
        assert c.unreadable == 2  # the verl line and rollout 4 held only unknown names
