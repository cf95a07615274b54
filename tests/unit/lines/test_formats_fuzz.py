"""The other formats' readers (lines/formats.py, #41): never raise on any text, and read back
what a generated valid line holds."""

from __future__ import annotations

import json
import math

from hypothesis import assume, given, settings, strategies as st

from grpo_tui.lines.formats import (
    COUNTED,
    parse_json,
    parse_prime_rl,
    parse_table_row,
    parse_trl,
    table_header,
    table_rule,
)
from grpo_tui.lines.parse import LineParser
from grpo_tui.lines.records import MetricRecord

FAST = settings(max_examples=200, deadline=None)
# text near the formats' anchors, so the fuzz reaches past their first tests
ANCHORS = st.sampled_from(
    [
        '{"',
        '"step_key"',
        '"data"',
        '"loss"',
        '"global_step/max_steps"',
        "{'loss'",
        "| Loss",
        "| Reward",
        "Step ",
        "|",
        "\t",
    ]
)
NEAR = st.lists(
    st.one_of(st.text(max_size=12), ANCHORS, st.sampled_from([":", " ", "1", "nan", "null", "{", "}"])), max_size=24
).map("".join)
TEXT = st.one_of(st.text(max_size=200), NEAR)
KEY = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
VALUE = st.one_of(FINITE, st.integers(-(2**53), 2**53), st.sampled_from([math.nan, math.inf, -math.inf]))


@FAST
@given(TEXT)
def test_readers_never_raise(text):
    parse_json(text)
    parse_prime_rl(text)
    parse_trl(text)
    names = table_header(text)
    table_rule(text)
    parse_table_row(text, names or ["step", "loss"])


@FAST
@given(st.lists(TEXT, max_size=20))
def test_parser_never_raises_and_counts_every_line(lines):
    lines = [ln.replace("\n", " ") for ln in lines]
    p = LineParser()
    p.feed_lines(lines)
    p.flush()
    c = p.counts
    assert c.lines == len(lines) == c.metric_lines + c.event_lines + c.noise + c.unreadable


def _same(a, b) -> bool:
    return (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and a != a else a == b


@FAST
@given(
    st.sampled_from(["rollout/step", "train/step", "eval/step"]),
    st.integers(0, 2**53 - 1),
    st.dictionaries(KEY.map(lambda k: "rollout/" + k), VALUE, min_size=1, max_size=8),
    st.floats(0, 4e9),
)
def test_miles_jsonl_round_trip(step_key, n, metrics, ts):
    # (a metric named as the step key is the step itself: Miles never logs both)
    metrics = {k: v for k, v in metrics.items() if k != step_key}
    assume(metrics)
    body = dict(metrics, **{step_key: n})
    line = json.dumps({"ts": ts, "step_key": step_key, "step": n, "metrics": body}, separators=(",", ":"))
    rec = parse_json(line)
    assert rec is not None and rec.n == n and rec.ts == ts and rec.source == "metrics.jsonl"
    want = {"rollout/step": "rollout", "train/step": "step", "eval/step": "eval"}[step_key]
    assert rec.kind == want
    kept = body if want == "step" else metrics
    assert rec.metrics.keys() == kept.keys() and all(_same(rec.metrics[k], v) for k, v in kept.items())
    assert set(rec.raw) == {k for k, v in kept.items() if isinstance(v, float) and not math.isfinite(v)}


@FAST
@given(st.integers(0, 2**53 - 1), st.dictionaries(KEY, st.one_of(FINITE, st.none()), min_size=1, max_size=8))
def test_verl_file_logger_round_trip(n, data):
    rec = parse_json(json.dumps({"step": n, "data": data}, separators=(",", ":")))
    assert rec is not None and (rec.kind, rec.n, rec.source) == ("rollout", n, "verl")
    assert rec.raw == {k: "null" for k, v in data.items() if v is None}
    assert all(math.isnan(rec.metrics[k]) if v is None else rec.metrics[k] == v for k, v in data.items())


@FAST
@given(
    st.integers(0, 10**9),
    st.floats(-1e6, 1e6),
    st.floats(0, 1e4),
    st.booleans(),
    st.sampled_from(["", "[INFO:swift] "]),
)
def test_swift_dict_round_trip(n, loss, length, quoted_json, prefix):
    d = {"loss": loss, "completions/mean_length": length, "global_step/max_steps": f"{n}/{n + 5}", "percentage": "1%"}
    text = prefix + (json.dumps(d) if quoted_json else repr(d))
    rec = parse_json(text) if quoted_json else parse_trl(text)
    assert rec is not None and (rec.kind, rec.n, rec.source) == ("rollout", n, "trl")
    assert rec.metrics == {"loss": loss, "completions/mean_length": length}


@FAST
@given(
    st.integers(0, 10**6),
    st.floats(-10, 10, allow_nan=False),
    st.floats(0, 10, allow_nan=False),
    st.floats(0, 1e3, allow_nan=False),
    st.booleans(),
    st.sampled_from(["", "10:00:33 SUCCESS ", "10:00:33 SUCCESS [trainer] "]),
)
def test_prime_rl_round_trip(n, loss, entropy, grad, colons, prefix):
    c = ":" if colons else ""
    t = "Time: 4.29s" if colons else "  4.29s"
    line = f"{prefix}Step {n} | {t} | Loss{c} {loss:.4f} | Entropy{c} {entropy:.4f} | Grad. Norm{c} {grad:.4f}"
    rec = parse_prime_rl(line)
    assert rec is not None and (rec.kind, rec.n, rec.source) == ("rollout", n, "prime-rl")
    assert rec.metrics["loss/mean"] == float(f"{loss:.4f}") and rec.metrics["optim/grad_norm"] == float(f"{grad:.4f}")
    assert rec.metrics["entropy/mean"] == float(f"{entropy:.4f}") and rec.metrics["time/step"] == 4.29


@FAST
@given(
    st.lists(st.text("abcdefghij_/", min_size=1, max_size=8), min_size=1, max_size=6, unique=True),
    st.lists(st.integers(0, 10**6), min_size=1, max_size=5, unique=True),
    st.sampled_from(["md", "bare", "tab"]),
    st.data(),
)
def test_table_round_trip(names, steps, style, data):
    def row(cells):
        if style == "tab":
            return "\t".join(cells)
        text = " | ".join(cells)
        return f"| {text} |" if style == "md" else text

    lines = [row(["Step", *names])]
    if style != "tab":
        lines.append(row(["--"] * (len(names) + 1)))
    want = {}
    for n in steps:
        vals = data.draw(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=len(names), max_size=len(names)))
        want[n] = dict(zip(names, vals))
        lines.append(row([str(n), *(repr(v) for v in vals)]))
    p = LineParser()
    recs = [i for i in p.feed_lines(lines) + p.flush() if isinstance(i, MetricRecord)]
    assert {r.n: r.metrics for r in recs} == want and {r.source for r in recs} == {"trl"}


def test_counted_trl_dicts_and_bad_global_steps():
    assert parse_trl("{'loss': 0.1, 'reward': 0.2}").n == COUNTED  # type: ignore[union-attr]
    assert parse_json('{"loss": 0.1, "global_step/max_steps": "x/9"}').n is None  # type: ignore[union-attr]
    p = LineParser()
    p.feed_lines(['{"loss": 0.1, "global_step/max_steps": "x/9"}', '{"step":-1,"data":{"a":1}}'])
    assert p.counts.unreadable == 2
