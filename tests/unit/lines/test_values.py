"""values.parse_dict: the Python-repr dicts of metric lines (docs/log-format.md §4)."""

from __future__ import annotations

import math

import pytest

from grpo_tui.lines.values import parse_dict, parse_number


def test_plain_numbers_keep_full_precision_and_int_type():
    d = parse_dict(
        "{'rollout/response_len/mean': 2210.41796875, 'rollout/rewards': "
        "-1.862645149230957e-09, 'train/lr-pg_0': 1e-06, 'rollout/response_len/max': 8192, "
        "'perf/rollout_time': 187.2291259765625, 'train/ppo_kl': 2.1e-05}"
    )
    assert d.complete and not d.error and not d.abridged
    assert d.values == {
        "rollout/response_len/mean": 2210.41796875,
        "rollout/rewards": -1.862645149230957e-09,
        "train/lr-pg_0": 1e-06,
        "rollout/response_len/max": 8192,
        "perf/rollout_time": 187.2291259765625,
        "train/ppo_kl": 2.1e-05,
    }
    assert type(d.values["rollout/response_len/max"]) is int
    assert type(d.values["train/lr-pg_0"]) is float
    assert list(d.values) == [
        "rollout/response_len/mean",
        "rollout/rewards",
        "train/lr-pg_0",
        "rollout/response_len/max",
        "perf/rollout_time",
        "train/ppo_kl",
    ]


def test_empty_dict():
    d = parse_dict("{}")
    assert d.values == {} and d.complete and not d.error


@pytest.mark.parametrize(
    "token,check,raw",
    [
        ("nan", math.isnan, "nan"),
        ("inf", lambda v: v == math.inf, "inf"),
        ("-inf", lambda v: v == -math.inf, "-inf"),
    ],
)
def test_bare_nonfinite_tokens(token, check, raw):
    d = parse_dict("{'train/loss': 0.5, 'train/grad_norm': " + token + ", 'train/step': 7}")
    assert check(d.values["train/grad_norm"])
    assert d.values["train/loss"] == 0.5 and d.values["train/step"] == 7
    assert d.raw_nonfinite == {"train/grad_norm": raw}
    assert d.complete


def test_nonfinite_on_slow_path_keeps_token():
    # a string value forces the slow reader; the raw token must still be kept
    d = parse_dict("{'s': 'x', 'a': nan, 'b': -inf, 'c': inf}")
    assert math.isnan(d.values["a"]) and d.values["b"] == -math.inf and d.values["c"] == math.inf
    assert d.raw_nonfinite == {"a": "nan", "b": "-inf", "c": "inf"}


def test_numpy_scalars_unwrapped():
    d = parse_dict(
        "{'passrate/pass@1': np.float64(0.4609375), 'passrate/pass@2': "
        "np.float64(0.5848214285714286), 'multi_turn/multi_turn_metric/round_number_max': "
        "np.int64(4), 'x': np.float64(nan)}"
    )
    assert d.values["passrate/pass@1"] == 0.4609375
    assert d.values["passrate/pass@2"] == 0.5848214285714286
    assert d.values["multi_turn/multi_turn_metric/round_number_max"] == 4
    assert type(d.values["multi_turn/multi_turn_metric/round_number_max"]) is int
    assert math.isnan(d.values["x"])
    assert d.raw_nonfinite.get("x") == "nan"
    assert d.complete


def test_torch_tensor_unwrapped():
    d = parse_dict("{'a': tensor(0.5, device='cuda:0'), 'b': tensor(0.25), 'c': 1}")
    assert d.values == {"a": 0.5, "b": 0.25, "c": 1}
    assert d.complete and not d.error


def test_strings_bools_none():
    d = parse_dict("{'name': 'aime', 'flag': True, 'off': False, 'missing': None, 'n': 3}")
    assert d.values == {"name": "aime", "flag": True, "off": False, "missing": None, "n": 3}
    assert d.values["flag"] is True and d.values["missing"] is None


def test_strings_with_quotes_commas_braces():
    d = parse_dict("""{'s': 'a, b}: {c', 't': "it's", 'u': 'say "hi"', 'v': 'back\\\\slash', 'n': 1.5}""")
    assert d.values == {"s": "a, b}: {c", "t": "it's", "u": 'say "hi"', "v": "back\\slash", "n": 1.5}
    assert d.complete


def test_key_with_single_quote_is_double_quoted():
    # repr() double-quotes a key that contains '
    d = parse_dict("""{"eval/it's": 0.25, 'eval/x': 1}""")
    assert d.values == {"eval/it's": 0.25, "eval/x": 1}


def test_keys_with_special_characters():
    d = parse_dict(
        "{'rollout/zero_std/count_0.0': 7, 'rollout/zero_std/count_-1.0': 2, "
        "'eval/aime-pass@16': np.float64(0.5), 'train/lr-pg_1': 1e-06}"
    )
    assert d.values == {
        "rollout/zero_std/count_0.0": 7,
        "rollout/zero_std/count_-1.0": 2,
        "eval/aime-pass@16": 0.5,
        "train/lr-pg_1": 1e-06,
    }


def test_abridged_keeps_every_key_before_ellipsis():
    d = parse_dict("{'train/loss': -6.05e-09, 'train/lr-pg_0': 1e-06, ...}")
    assert d.abridged
    assert d.values == {"train/loss": -6.05e-09, "train/lr-pg_0": 1e-06}
    assert not d.error


@pytest.mark.parametrize("dots", ["...", "\u2026"])
def test_abridged_in_the_middle_of_doc_example(dots):
    # docs/log-format.md §9: {'train/loss': -6.05e-09, …, 'train/lr-pg_0': 1e-06, …, 'train/step': 11}
    d = parse_dict("{'train/loss': -6.05e-09, " + dots + ", 'train/lr-pg_0': 1e-06, " + dots + ", 'train/step': 11}")
    assert d.values == {"train/loss": -6.05e-09, "train/lr-pg_0": 1e-06, "train/step": 11}
    assert d.abridged and d.complete and not d.error


def test_abridged_with_unicode_ellipsis_at_end():
    d = parse_dict("{'rollout/response_len/mean': 2210.41796875, 'rollout/zero_std/count_0': 12, \u2026}")
    assert d.values == {"rollout/response_len/mean": 2210.41796875, "rollout/zero_std/count_0": 12}
    assert d.abridged


def test_only_ellipsis():
    d = parse_dict("{...}")
    assert d.values == {}
    assert d.abridged


def test_cut_dict_keeps_complete_pairs():
    d = parse_dict("{'train/loss': -0.00213, 'train/pg_loss': -0.00213, 'train/entropy_loss': 0.0, 'train/pg_c")
    assert not d.complete
    assert d.values == {"train/loss": -0.00213, "train/pg_loss": -0.00213, "train/entropy_loss": 0.0}


def test_cut_inside_a_number_drops_that_number():
    # "0.00" could continue ("0.0061"): the half number is not kept
    d = parse_dict("{'a': 1.5, 'b': 0.00")
    assert not d.complete
    assert d.values == {"a": 1.5}


@pytest.mark.parametrize("tail", ["np.float", "np.float64(0.4", "na", "Tr", "tensor(0.5, dev", "'abc", '"it'])
def test_cut_inside_other_tokens(tail):
    d = parse_dict("{'a': 2, 'b': " + tail)
    assert not d.complete
    assert d.values == {"a": 2}


def test_garbage_value_stops_scan_and_keeps_earlier_pairs():
    d = parse_dict("{'a': 1, 'b': <object at 0x7f>, 'c': 3}")
    assert d.error and not d.complete
    assert d.values == {"a": 1}


def test_never_evaluates_code():
    # a call is never executed: the reader only keeps literals
    d = parse_dict("{'a': exit(3), 'b': __import__('os').system('false'), 'c': 1}")
    assert isinstance(d.values.get("a"), (int, type(None)))
    assert "c" not in d.values or d.values["c"] == 1


def test_nested_values_do_not_break_the_dict():
    d = parse_dict("{'a': {'x': 1}, 'b': [1, 2], 'c': (3, 4), 'd': 0.5}")
    assert d.complete
    assert d.values["d"] == 0.5
    assert d.values["b"] == [1, 2]


def test_whitespace_variants_of_pprint():
    d = parse_dict("{'a': 1,\n 'b': 2.5,\n 'c': 'x'}")
    assert d.values == {"a": 1, "b": 2.5, "c": "x"} and d.complete


def test_parse_number():
    assert parse_number("8192") == 8192 and type(parse_number("8192")) is int
    assert parse_number("-3") == -3 and type(parse_number("-3")) is int
    assert parse_number("1e-06") == 1e-06 and type(parse_number("1e-06")) is float
    assert parse_number("2035.5") == 2035.5
    assert parse_number("-3.157765604555607e-08") == -3.157765604555607e-08


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "}",
        "{'",
        "{'a'",
        "{'a':",
        "{'a': ",
        "not a dict",
        "{{{{",
        "{'a': 1,,}",
        "\x00\x01",
        "{'a': 1e}",
        "{'a': --1}",
        "{'a': .}",
        "{'a': 1.2.3}",
    ],
)
def test_malformed_never_raises(text):
    d = parse_dict(text)
    assert isinstance(d.values, dict)
    assert not (d.complete and d.error)
