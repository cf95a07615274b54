"""Scalars and rows read from a run's metric files, made into the console's records.

Miles sends one dict per log call to every backend (the console line's dict, plus its step key), so a
row read back is one console line: train/* keys on the train-step axis become a `step N` record,
rollout/* and perf/* keys on the rollout axis a `rollout N` or `perf N` record, eval/* an `eval N`.
W&B keeps each log call as one history row. TensorBoard keeps one event per scalar; the events of one
log call are consecutive in their process's file, share a step and were written within moments, so
a row is a run of those (docs/metric-files.md). verl, TRL and OpenRLHF log one dict per training
step: a `rollout N` record of that framework, as their console lines are read.

Rows from several files (one per process) are released in the order they were written, and only up
to what every file has reached (a watermark), so a rollout is not judged before the process that
writes its other half has caught up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..lines.records import MAX_ID, Event, MetricRecord

AXIS_KEYS = {"rollout/step": "rollout", "train/step": "train", "eval/step": "eval"}
_META_KEYS = frozenset({"_step", "_runtime", "_timestamp", "rollout/step", "eval/step"})
SPLIT_GAP = 1.0  # s between two TensorBoard events of one file: another log call


def axis_of(key: str) -> str:
    """The step axis Miles logs a key on (its W&B define_metric calls; TensorBoard the same steps)."""
    if key.startswith("train/"):
        return "train"
    if key.startswith("eval/"):
        return "eval"
    return "rollout"


def framework_of(keys: Iterable[str]) -> str:
    """Which trainer wrote these metric names (TRL and OpenRLHF prefix theirs with `train/` in
    TensorBoard and W&B, which Miles uses too; the other names tell them apart)."""
    ks = set(keys)
    if any(k.startswith(("rollout/", "perf/")) for k in ks):
        return "miles"
    if "critic/score/mean" in ks or any(k.startswith(("actor/", "timing_s/", "response_length/")) for k in ks):
        return "verl"
    if ks & {"train/vllm_kl", "train/ppo_clip_ratio", "train/policy_loss", "train/actor_lr"}:
        return "openrlhf"
    if any(k.startswith(("train/completions/", "train/rewards/")) for k in ks) or ks & {
        "train/frac_reward_zero_std",
        "train/reward",
        "train/global_step",
    }:
        return "trl"
    return "miles"


@dataclass(slots=True)
class Row:
    """One log call's dict as read back: from W&B a history row, from TensorBoard a run of events."""

    source: str  # the file it came from (its process)
    ts: float | None  # when it was logged (seconds since the epoch)
    step: int | None  # on its axis; None: the row named none
    axis: str  # rollout | train | eval
    values: dict[str, Any] = field(default_factory=dict)
    plain: bool = False  # every value a float and no step or meta key (TensorBoard's)
    has_perf: bool = False  # (plain rows) a perf/ key among them


_SECONDS: dict[int, str] = {}  # a second's text (rows come many to a second)


def _time_text(ts: float | None) -> str | None:
    """The time as the console prints it (local time, milliseconds)."""
    if ts is None or not math.isfinite(ts):
        return None
    sec = int(ts // 1)
    text = _SECONDS.get(sec)
    if text is None:
        try:
            text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(sec))
        except (OverflowError, OSError, ValueError):
            return None
        if len(_SECONDS) > 4096:
            _SECONDS.clear()
        _SECONDS[sec] = text
    return f"{text}.{int((ts - sec) * 1000):03d}"


def _step_id(value: Any) -> int | None:
    """A step as logged (an int, or a float with no fraction) when it can be a rollout id."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    n = int(value)
    return n if 0 <= n <= MAX_ID else None


def history_row(source: str, values: dict[str, Any]) -> Row:
    """A W&B history row: the axis and step from the step key Miles adds (rollout/step, train/step,
    eval/step); the trainers that log one dict per step carry their own (train/global_step, _step)."""
    ts = values.get("_timestamp")
    ts = float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None
    for key, axis in AXIS_KEYS.items():
        if key in values:
            return Row(source, ts, _step_id(values[key]), axis, values)
    for key in ("train/global_step", "eval/global_step", "global_step", "step", "_step"):
        if key in values:
            return Row(source, ts, _step_id(values[key]), "rollout", values)
    return Row(source, ts, None, "rollout", values)


def record_of(row: Row, framework: str) -> MetricRecord | None:
    """The console record a row stands for (None: nothing a record could hold)."""
    if row.step is None:
        return None
    if row.plain and framework == "miles":
        return _plain_record(row, row.step)
    metrics: dict[str, Any] = {}
    nonfinite: dict[str, str] = {}
    strip = framework in ("trl", "openrlhf")
    for key, value in row.values.items():
        if key in _META_KEYS or (strip and key in ("train/global_step", "train/epoch")):
            continue
        if value is None:  # (W&B and verl write a NaN they could not encode as null)
            value = math.nan
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        name = key[6:] if strip and key.startswith("train/") else key
        metrics[name] = value
        if isinstance(value, float) and not math.isfinite(value):
            nonfinite[name] = "nan" if value != value else ("inf" if value > 0 else "-inf")
    if not metrics:
        return None
    if framework == "miles":
        if row.axis == "train":
            kind = "step"
            metrics.setdefault("train/step", row.step)
        elif row.axis == "eval":
            kind = "eval"
        elif any(k.startswith("perf/") for k in metrics):
            kind = "perf"  # the rollout manager's dict (rollout/ and perf/ keys), or the trainer's timers
        else:
            kind = "rollout"
        source = None
    else:  # one dict per training step; its evals on their own rows
        kind = "eval" if row.axis == "eval" or all(k.startswith("eval/") for k in metrics) else "rollout"
        source = framework
    return MetricRecord(
        kind,
        row.step,
        metrics,
        time=_time_text(row.ts),
        ts=row.ts,
        proc=row.source,
        source=source,
        nonfinite=nonfinite,
    )


def _plain_record(row: Row, step: int) -> MetricRecord:
    """record_of for a TensorBoard row of a Miles run: the values are floats already."""
    metrics = row.values
    nonfinite: dict[str, str] = {}
    if not all(map(math.isfinite, metrics.values())):
        nonfinite = {
            k: ("nan" if v != v else "inf" if v > 0 else "-inf") for k, v in metrics.items() if not math.isfinite(v)
        }
    if row.axis == "train":
        kind = "step"
        metrics["train/step"] = step
    elif row.axis == "eval":
        kind = "eval"
    else:
        kind = "perf" if row.has_perf else "rollout"
    return MetricRecord(kind, step, metrics, time=_time_text(row.ts), ts=row.ts, proc=row.source, nonfinite=nonfinite)


_AXES = ("rollout", "train", "eval")


def tensorboard_rows(source: str, tags: list[str], tag_ids, steps, wall, values) -> list[Row]:
    """A file's scalar points (columns, file order) cut into log calls: a new row where the axis
    or the step changes, or SPLIT_GAP seconds pass between two events."""
    import numpy as np  # (here: reading a log imports this module, and export of a log needs no numpy)

    n = len(tag_ids)
    if not n:
        return []
    axis = np.array([_AXES.index(axis_of(t)) for t in tags], np.int8)[tag_ids]
    perf = np.array([t.startswith("perf/") for t in tags], bool)[tag_ids]
    new = np.ones(n, bool)
    new[1:] = (axis[1:] != axis[:-1]) | (steps[1:] != steps[:-1]) | (np.abs(np.diff(wall)) > SPLIT_GAP)
    starts = np.flatnonzero(new)
    has_perf = np.logical_or.reduceat(perf, starts).tolist()
    bounds = starts.tolist() + [n]
    names = [tags[i] for i in tag_ids.tolist()]
    vals = values.tolist()
    return [
        Row(source, w, _step_id(st), _AXES[ax], dict(zip(names[a:b], vals[a:b])), True, hp)
        for a, b, st, w, ax, hp in zip(
            bounds, bounds[1:], steps[starts].tolist(), wall[starts].tolist(), axis[starts].tolist(), has_perf
        )
    ]


def config_events(config: dict[str, Any], ts: float | None) -> list[Event]:
    """The run's settings the store keeps as flags (groups per rollout, K) as `arg` events, as
    the console's argument dump gives them."""
    from ..lines.launch import ARG_DUMP_NAMES

    out = []
    for name in sorted(ARG_DUMP_NAMES):
        value = config.get(name)
        if isinstance(value, dict) and "value" in value:  # (wandb's {"value": ..., "desc": ...})
            value = value["value"]
        if value is None or isinstance(value, (dict, list)):
            continue
        out.append(Event("arg", _time_text(ts), ts, 0, f"{name} {value}", {"name": name, "value": str(value)}))
    return out


def exit_event(code: int, ts: float | None, source: str) -> Event:
    """A W&B exit record as the console's job line: 0 finished, anything else failed."""
    kind = "job_succeeded" if code == 0 else "job_failed"
    text = f"W&B run exited with code {code} ({source})"
    return Event(kind, _time_text(ts), ts, 0, text, {"exit_code": code})


class Merger:
    """Rows of several files, released in the order they were logged up to the watermark: the
    oldest newest-time among the files that are still writing. `release(final=True)` (end of
    input, or every file quiet) releases the rest."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, int, Any]] = []  # (ts, arrival, record or event)
        self.newest: dict[str, float] = {}  # file -> its newest row's time
        self._seq = 0

    def add(self, source: str, items: list, newest: float | None) -> None:
        for it in items:
            ts = it.ts if it.ts is not None else self.newest.get(source, 0.0)
            self.pending.append((ts, self._seq, it))
            self._seq += 1
        if newest is not None:
            self.newest[source] = max(newest, self.newest.get(source, newest))

    def release(self, final: bool = False, quiet: Iterable[str] = ()) -> list:
        """What can be judged now: everything when `final`, else the rows logged no later than
        every file not in `quiet` has reached."""
        if not self.pending:
            return []
        self.pending.sort(key=lambda p: (p[0], p[1]))
        if final:
            out, self.pending = self.pending, []
            return [p[2] for p in out]
        skip = set(quiet)
        marks = [t for src, t in self.newest.items() if src not in skip]
        mark = min(marks) if marks else math.inf
        cut = 0
        while cut < len(self.pending) and self.pending[cut][0] <= mark:
            cut += 1
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return [p[2] for p in out]
