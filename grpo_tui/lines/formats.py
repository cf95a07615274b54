"""Other line formats read into the same records (docs/log-format.md §8, §11).

verl prints `step:N - key:value - key:value ...` (possibly glued to a tqdm bar, values may be
`np.float64(...)`); TRL and ms-swift print one Python dict per logging step (ms-swift adds
`global_step/max_steps`); prime-rl prints `Step N | Loss 0.1 | ...`; a notebook shows TRL's
metrics as a table.  JSON lines: Miles' `dashboard/metrics.jsonl`, verl's `file` logger and
JSON dicts (ms-swift's `logging.jsonl`).  All become the records a console line would give,
so the same store, signals and rules apply; the record's source names the framework where it
is not Miles, because Miles-specific defaults (ranges, one update per rollout) don't hold.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any, NamedTuple

from .records import MAX_ID, bounded_int
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


# The frameworks whose records switch a segment off Miles' defaults (store.metric_store: add_record).
OTHER_FRAMEWORKS = ("verl", "trl", "prime-rl", "openrlhf")  # (openrlhf: from its TensorBoard or W&B files)


class OtherRecord(NamedTuple):
    """What a line of another format gives: a record's fields, or (kind "end") a finish line.

    n: the step; None when the line's step can't be an id (the caller counts it unreadable);
    COUNTED when the format has none (TRL dicts: the caller counts the lines)."""

    kind: str
    n: int | None
    metrics: dict[str, Any]
    raw: dict[str, str]
    source: str
    ts: float | None = None


COUNTED = -1


def _finite(v: float) -> bool:
    return v == v and v not in (math.inf, -math.inf)


def parse_trl(text: str) -> OtherRecord | None:
    """A TRL / HF-Trainer log dict line (ms-swift's too), else None.

    kind is "rollout" for a training log, "eval" for `eval_*` dicts, "end" for the summary the
    HF Trainer logs once training is over (`train_runtime`: not a step, the run's finish line).
    """
    start = text.find("{'")
    if start < 0 or not any(f"'{k}'" in text for k in _TRL_KEYS + ("eval_loss", "train_runtime")):
        return None
    parsed = parse_dict(text[start:].rstrip())
    if not parsed.values:
        return None
    return _trl_record(parsed.values, dict(parsed.raw_nonfinite))


def _global_step(values: dict[str, Any]) -> int | None:
    """ms-swift's `global_step/max_steps` ("12/547"): the step, else COUNTED."""
    text = values.get("global_step/max_steps")
    if not isinstance(text, str):
        return COUNTED
    return bounded_int(text.partition("/")[0].strip())


def _trl_record(values: dict[str, Any], raw: dict[str, str]) -> OtherRecord | None:
    if "train_runtime" in values:
        end = {k: v for k, v in values.items() if isinstance(v, (int, float))}
        return OtherRecord("end", COUNTED, end, {}, "trl")
    n = _global_step(values)
    metrics: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, str):  # newer transformers pre-format floats as strings
            num = _number(v)
            if num is None:
                continue
            if isinstance(num, float) and not _finite(num):
                raw[k] = raw_token(v)
            v = num
        if v is None or isinstance(v, (dict, list)):
            continue
        metrics[k] = int(v) if isinstance(v, bool) else v
    if not metrics:
        return None
    if any(k.startswith("eval_") for k in metrics):
        # An eval dict repeats `epoch`; keep only its own keys so it can't overwrite the train row.
        return OtherRecord(
            "eval",
            n,
            {k: v for k, v in metrics.items() if k.startswith("eval_")},
            {k: v for k, v in raw.items() if k.startswith("eval_")},
            "trl",
        )
    return OtherRecord("rollout", n, metrics, raw, "trl")


# -- JSON lines ----------------------------------------------------------------------------------
# A JSON line is read only when one of these (quoted) is in it: _scan.c's other_format_may tests
# the same texts, so the C scanner never takes such a line for noise.
JSON_KEYS = (
    '"step_key"',
    '"data"',
    '"loss"',
    '"grad_norm"',
    '"learning_rate"',
    '"reward"',
    '"epoch"',
    '"completions/mean_length"',
    '"eval_loss"',
    '"train_runtime"',
    '"global_step/max_steps"',
)
_DECODER = json.JSONDecoder()  # NaN, Infinity, -Infinity read as floats; nothing is evaluated
_MILES_KINDS = {"train/step": "step", "eval/step": "eval", "rollout/step": "rollout"}


def parse_json(text: str) -> OtherRecord | None:
    """A JSON metrics line, else None: Miles' metrics.jsonl (`{"ts", "step_key", "step",
    "metrics"}`), verl's file logger (`{"step", "data"}`), or a flat HF-Trainer / ms-swift log
    dict (from its first `{"`, so a log prefix before it is fine; text after it is ignored)."""
    start = text.find('{"')
    if start < 0 or not any(k in text for k in JSON_KEYS):
        return None
    try:
        obj, _ = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):  # damaged, cut, nested past the stack, a 5,000-digit int
        return None
    if not isinstance(obj, dict):
        return None
    body = obj.get("metrics")
    if "step_key" in obj and isinstance(body, dict):
        return _miles_json(obj, body)
    data = obj.get("data")
    if "step" in obj and isinstance(data, dict):
        metrics, raw = _json_values(data, null="null")
        return OtherRecord("rollout", _json_id(obj["step"]), metrics, raw, "verl") if metrics else None
    values, raw = _json_values(obj, keep_text=True)
    return _trl_record(values, raw)


def _json_id(v: Any) -> int | None:
    return v if type(v) is int and 0 <= v <= MAX_ID else None


def _json_values(obj: dict, null: str | None = None, keep_text: bool = False) -> tuple[dict[str, Any], dict[str, str]]:
    """The numbers of a JSON object (bools as 0/1), with the raw token of each non-finite one.
    `null`: read null as NaN with this token (verl's orjson writes NaN and inf as null).
    `keep_text`: keep strings too (the TRL reader reads "0.25" and "12/547")."""
    metrics: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for k, v in obj.items():
        t = type(v)
        if t is float:
            if not _finite(v):
                raw[k] = "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
        elif t is bool:
            v = int(v)
        elif v is None and null is not None:
            v = math.nan
            raw[k] = null
        elif not (t is int or (keep_text and t is str)):
            continue
        metrics[k] = v
    return metrics, raw


def _miles_json(obj: dict, body: dict) -> OtherRecord | None:
    """One line of Miles' dashboard/metrics.jsonl (miles/dashboard/store.py MetricsRecord): the
    dict tracking.log got, which the console prints as `rollout N:` / `perf N:` / `step N:` /
    `eval N:`; the step key's own entry is dropped where the console line does not show it."""
    step_key = obj.get("step_key")
    if not isinstance(step_key, str) or step_key not in _MILES_KINDS:
        return None
    kind = _MILES_KINDS[step_key]
    metrics, raw = _json_values(body, keep_text=True)
    if kind != "step":
        metrics.pop(step_key, None)
        raw.pop(step_key, None)
    if kind == "rollout":
        kind = _rollout_kind(metrics)
    if not metrics:
        return None
    t = obj.get("ts")
    ts = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and _finite(t) else None
    return OtherRecord(kind, _json_id(obj.get("step")), metrics, raw, "metrics.jsonl", ts)


def _rollout_kind(metrics: dict[str, Any]) -> str:
    """The console kind of a rollout/step dict: the trainer's rollout dict is `rollout N:`, the
    rollout manager's (rollout/... with perf/...) and the trainer's timers are `perf N:`."""
    if any(k.startswith("perf/") for k in metrics):
        return "perf"
    for prefix in ("multi_turn/", "passrate/"):
        if metrics and all(k.startswith(prefix) for k in metrics):
            return prefix[:-1]
    return "rollout"


def time_text(ts: float | None) -> str | None:
    """A record time as the console prints it (`2026-08-21 10:00:54.462`), from epoch seconds
    read as UTC (the parser reads the console's naive times as UTC too)."""
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (OverflowError, ValueError, OSError):
        return None


# -- prime-rl ------------------------------------------------------------------------------------
# The trainer's and the orchestrator's step lines (prime_rl/trainer/rl/train.py, orchestrator/
# orchestrator.py; logger.success): `Step 9 |   4.29s | Loss 0.0000 | Entropy 0.3571 | ...`, before
# 2026 `Step 9 | Time: 4.29s | Loss: 0.0000 | ...`; loguru's `HH:MM:SS SUCCESS [tag] ` before it.
PRIME_ANCHORS = ("| Loss", "| Reward")
_PRIME = re.compile(
    r"(?:^\s*|(?:SUCCESS|INFO|DEBUG|WARNING)\s{1,8}(?:\[[^\]\s]{1,64}\]\s{1,8})?)Step (?P<n>\d{1,20}) \| (?P<body>.+)$"
)
_PRIME_PART = re.compile(r"(?P<label>[A-Za-z][A-Za-z .\-]{0,40}?):?\s+(?P<v>[-+]?(?:\d|\.\d|nan|inf)\S*)(?P<rest>.*)$")
_DURATION = re.compile(r"(?P<v>\d+(?:\.\d+)?)(?P<u>ms|s|m|h|d)$")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# label -> (name, scale): prime-rl's own W&B names where it has them (a share from "%" is scaled)
_PRIME_TRAINER = {
    "loss": ("loss/mean", 1.0),
    "entropy": ("entropy/mean", 1.0),
    "mismatch kl": ("mismatch_kl/mean", 1.0),
    "grad. norm": ("optim/grad_norm", 1.0),
    "lr": ("optim/lr", 1.0),
    "throughput": ("perf/throughput", 1.0),
    "mfu": ("perf/mfu", 1.0),
    "peak mem.": ("perf/peak_memory", 1.0),
    "max vio": ("max_vio/mean", 1.0),
    "routing conf.": ("routing_confidence/mean", 1.0),
    "time": ("time/step", 1.0),
}
_PRIME_ORCHESTRATOR = {
    "reward": ("reward/mean", 1.0),
    "advantage": ("advantage/mean", 1.0),
    "seq. length": ("seq_len/mean", 1.0),
    "seq. len": ("seq_len/mean", 1.0),
    "throughput": ("orchestrator/perf/throughput", 1.0),
    "time": ("orchestrator/time/step", 1.0),
    "trainable": ("trainable/ratio", 1.0),
    "turns": ("num_turns/mean", 1.0),
    "branches": ("num_branches/mean", 1.0),
    "max off-policy": ("off_policy_level/max", 1.0),
    "max. off-policy level": ("off_policy_level/max", 1.0),
    "async level": ("async_level", 1.0),
    "error": ("error/mean", 0.01),
    "cancelled": ("cancelled/mean", 0.01),
    "truncation": ("is_truncated/mean", 0.01),
}


def _duration(text: str) -> float | None:
    """format_time's text (`4.29s`, `1m 3s`, `2h 5m`, `120ms`) as seconds."""
    total = 0.0
    parts = text.split()
    if not parts or len(parts) > 2:
        return None
    for part in parts:
        m = _DURATION.match(part)
        if m is None:
            return None
        total += float(m.group("v")) * _SECONDS[m.group("u")]
    return total


def parse_prime_rl(text: str) -> OtherRecord | None:
    """A prime-rl trainer or orchestrator step line, else None: a `rollout` record n=step, the
    trainer's numbers and the orchestrator's in one row (their names differ)."""
    if not any(a in text for a in PRIME_ANCHORS):
        return None
    m = _PRIME.search(text)
    if m is None:
        return None
    parts = m.group("body").split(" | ")
    table = _PRIME_TRAINER if any(p.startswith("Loss") for p in parts) else _PRIME_ORCHESTRATOR
    metrics: dict[str, Any] = {}
    raw: dict[str, str] = {}
    first = parts[0].strip()
    secs = _duration(first.removeprefix("Time:").strip())
    if secs is not None:
        metrics[table["time"][0]] = secs
    for part in parts[1:] if secs is not None else parts:
        pm = _PRIME_PART.match(part.strip())
        if pm is None:
            continue
        label = pm.group("label").strip().lower()
        token = pm.group("v")
        name, scale = table.get(label, ("", 1.0))
        if not name:
            name = re.sub(r"[^a-z0-9]+", "_", label).strip("_")
            if not name:
                continue
        if label == "trainable":  # `Trainable 3/4 (75.0%)`: the share
            got, _, of = token.partition("/")
            a, b = _number(got), _number(of)
            if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
                continue
            v: Any = a / b
        else:
            v = _number(token.rstrip("%"))
            if v is None:
                continue
            if scale != 1.0:
                v = v * scale
        if isinstance(v, float) and not _finite(v):
            raw[name] = raw_token(token)
        metrics[name] = v
    if not metrics:
        return None
    return OtherRecord("rollout", bounded_int(m.group("n")), metrics, raw, "prime-rl")


# -- Megatron's training line ---------------------------------------------------------------------
# ms-swift's Megatron backend (`megatron rlhf --rlhf_type grpo`) prints Megatron's per-iteration line,
# its GRPO metrics under TRL's names (ms-swift issues #6718, #8173): `[time] iteration 2/ 624 |
# consumed samples: 256 | ... | loss: -2.5E-02 | kl: 1.1E-02 | reward: 7.6E-01 | ... | grad norm: 75.2 |`.
MEGATRON_ANCHOR = "| reward: "
_MEGATRON = re.compile(r"\biteration\s+(?P<n>\d+)\s*/\s*\d+\s*(?P<body>\|.*)$")
_MEGATRON_NAMES = {"grad norm": "grad_norm", "learning rate": "learning_rate"}


def parse_megatron(text: str) -> OtherRecord | None:
    """A Megatron `iteration N/M | label: value | ...` line with a reward, else None: a `rollout`
    record n=N of TRL's names (`grad norm` read as `grad_norm`)."""
    if MEGATRON_ANCHOR not in text:
        return None
    m = _MEGATRON.search(text)
    if m is None:
        return None
    metrics: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for part in m.group("body").split("|"):
        label, sep, token = part.partition(":")
        label, token = label.strip(), token.strip()
        v = _number(token) if sep and label else None
        if v is None:
            continue  # (`elapsed time: 3m 8s`, `remaining time: ...`: no number)
        name = _MEGATRON_NAMES.get(label, label)
        if isinstance(v, float) and not _finite(v):
            raw[name] = raw_token(token)
        metrics[name] = v
    if not metrics:
        return None
    return OtherRecord("rollout", bounded_int(m.group("n")), metrics, raw, "trl")


# -- tables --------------------------------------------------------------------------------------
# TRL's metrics as a notebook shows them (the HF Trainer's notebook callback), pasted as text:
# `Step | Training Loss | reward` then `-- | --` then `1 | -0.2836 | 13.44`, the markdown form with
# outer pipes, or tab separated.  _scan.c's table_start tests the same start of line.
TABLE_START = re.compile(r"\|? *(?:Step[ \t|]|[0-9]+ *[|\t])")
_TABLE_NAMES = {"training loss": "loss", "validation loss": "eval_loss"}
_RULE_CELL = re.compile(r":?-+:?")
_SLASH = re.compile(r" */ *")
TABLE_MAX_COLUMNS = 256


def _cells(text: str) -> list[str] | None:
    t = text.strip()
    sep = "\t" if "\t" in t else "|"
    if sep == "|":
        t = t.removeprefix("|").removesuffix("|")
    cells = t.split(sep, TABLE_MAX_COLUMNS)
    return [c.strip() for c in cells] if 1 < len(cells) <= TABLE_MAX_COLUMNS else None


def table_header(text: str) -> list[str] | None:
    """The metric names of a table's header row (`Step | Training Loss | reward ...`), else None."""
    cells = _cells(text)
    if cells is None or cells[0] != "Step" or not all(cells[1:]):
        return None
    # (a pasted notebook table spells `rewards/f` as `rewards / f`)
    names = [_SLASH.sub("/", c) for c in cells[1:]]
    return ["step"] + [_TABLE_NAMES.get(c.lower(), c) for c in names]


def table_rule(text: str) -> bool:
    """The separator row under a header (`-- | --`, `|---|:---:|`)."""
    cells = _cells(text)
    return cells is not None and all(_RULE_CELL.fullmatch(c) for c in cells)


def parse_table_row(text: str, names: list[str]) -> OtherRecord | None:
    """A table row under the header `names`: a `rollout` record n=Step, else None."""
    cells = _cells(text)
    if cells is None or len(cells) != len(names):
        return None
    n = bounded_int(cells[0])
    if n is None:
        return None
    metrics: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for name, cell in zip(names[1:], cells[1:]):
        v = _number(cell)
        if v is None:
            continue  # an empty cell (`No log`) is no value
        if isinstance(v, float) and not _finite(v):
            raw[name] = raw_token(cell)
        metrics[name] = v
    return OtherRecord("rollout", n, metrics, raw, "trl") if metrics else None
