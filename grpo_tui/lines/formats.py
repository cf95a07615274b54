"""Two more console formats read into the same records: verl and TRL (docs/log-format.md §8).

verl prints `step:N - key:value - key:value ...` (possibly glued to a tqdm bar, values may be
`np.float64(...)`); TRL prints one Python dict per logging step with no step in it.  Both
become `rollout N` records so the same store, signals and rules apply; the segment remembers
the framework, because Miles-specific defaults (ranges, one update per rollout) don't hold.
"""

from __future__ import annotations

import re
from typing import Any

from .records import bounded_int
from .values import NONFINITE_TOKENS, parse_dict, parse_number, raw_token

_VERL = re.compile(r"(?:^|[^\w/])step:(?P<n>-?\d+) - (?P<body>.+)$")
_NP = re.compile(r"^(?:np|numpy)\.\w+\((?P<v>[^()]*)\)$")
_TRL_KEYS = ("loss", "grad_norm", "learning_rate", "reward", "epoch", "completions/mean_length")


def _number(text: str) -> Any:
    t = text.strip()
    m = _NP.match(t)
    if m:
        t = m.group("v").strip()
    if t in NONFINITE_TOKENS:
        return NONFINITE_TOKENS[t]
    if t in ("True", "False"):
        return 1 if t == "True" else 0
    try:
        return parse_number(t)
    except ValueError:
        return None


def parse_verl(text: str) -> tuple[int | None, dict[str, Any], dict[str, str]] | None:
    """(step, metrics, raw non-finite tokens) from a verl console line, else None.

    The step is None when it can't be an id (negative, past 2**53, not ASCII digits): the
    caller counts the line unreadable."""
    if "step:" not in text:
        return None
    m = _VERL.search(text)
    if not m:
        return None
    metrics: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for item in m.group("body").split(" - "):
        key, sep, value = item.rpartition(":")
        if not sep or not key or " " in key.strip():
            continue
        v = _number(value)
        if v is None:
            continue
        key = key.strip()
        metrics[key] = v
        if (isinstance(v, float) and v != v) or v in (float("inf"), float("-inf")):
            raw[key] = raw_token(value.strip())
    if not metrics:
        return None
    return bounded_int(m.group("n")), metrics, raw


# verl's RayPPOTrainer.fit, after its last step: pprint(f"Final validation metrics: {last_val_metrics}")
VERL_END = "Final validation metrics:"


def parse_trl(text: str) -> tuple[str, dict[str, Any], dict[str, str]] | None:
    """(kind, metrics, raw non-finite tokens) from a TRL log dict line, else None.

    kind is "rollout" for a training log, "eval" for `eval_*` dicts, "end" for the summary the
    HF Trainer logs once training is over (`train_runtime`: not a step, the run's finish line).
    """
    start = text.find("{'")
    if start < 0 or not any(f"'{k}'" in text for k in _TRL_KEYS + ("eval_loss", "train_runtime")):
        return None
    parsed = parse_dict(text[start:].rstrip())
    if not parsed.values:
        return None
    if "train_runtime" in parsed.values:
        return "end", {k: v for k, v in parsed.values.items() if isinstance(v, (int, float))}, {}
    metrics: dict[str, Any] = {}
    raw = dict(parsed.raw_nonfinite)
    for k, v in parsed.values.items():
        if isinstance(v, str):  # newer transformers pre-format floats as strings
            num = _number(v)
            if num is None:
                continue
            if isinstance(num, float) and (num != num or num in (float("inf"), float("-inf"))):
                raw[k] = raw_token(v)
            v = num
        if v is None:
            continue
        metrics[k] = v
    if not metrics:
        return None
    if any(k.startswith("eval_") for k in metrics):
        # An eval dict repeats `epoch`; keep only its own keys so it can't overwrite the train row.
        return (
            "eval",
            {k: v for k, v in metrics.items() if k.startswith("eval_")},
            {k: v for k, v in raw.items() if k.startswith("eval_")},
        )
    return "rollout", metrics, raw
