"""What the parser hands to the store: metric records and events (plain dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

METRIC_KINDS = ("rollout", "perf", "eval", "multi_turn", "step", "passrate")

# Event kinds the parser recognises (the health rules read these).
EVENT_KINDS = (
    "launch",  # EXEC:/`+ ray job submit` line of train.py, flags parsed
    "engine_retry",  # one 503 / connection-error retry of an engine request
    "max_retries",  # http retries exhausted
    "traceback",  # one Python traceback, all its lines
    "ft_fail",  # ft ... ok=false / phase=fail
    "train_retry",  # ft op=train phase=start ... attempt=K (K >= 1)
    "health_check_failed",
    "engines_recovered",
    "oom",
    "nccl_timeout",
    "job_failed",
    "job_succeeded",
    "job_stopped",
    "train_done",  # a trainer's own end-of-training line (HF/TRL `train_runtime` summary)
    "fatal",
    "weight_update_start",
    "weight_update_end",
    "checkpoint_start",
    "checkpoint_saved",
    "eval_skipped",
    "wandb",
    "tensorboard",
)


# The event kinds the store's rows depend on (store.metric_store: _add_event): `launch` begins a
# new run, `arg` sets a flag of the run (K, the groups).  A read whose events nobody else reads
# (export: LineParser.store_events_only) makes only these.
STORE_EVENT_KINDS = frozenset({"launch", "arg"})


MAX_ID = 2**53 - 1  # rollout/step ids live in float64 columns: exact up to 2**53


def bounded_int(text: str) -> int | None:
    """An id or count as logged: ASCII digits up to MAX_ID, else None.

    `\\d` also matches '１２３' and any number of digits; int() of those gives a surprise id, an
    id the store's float64 columns round, or Python's 4,300-digit ValueError.
    """
    if len(text) > 16 or not (text.isascii() and text.isdigit()):
        return None
    n = int(text)
    return n if n <= MAX_ID else None


@dataclass(slots=True)
class MetricRecord:
    """One ``<kind> N: {...}`` line (re-joined if it was wrapped over several lines)."""

    kind: str
    n: int
    metrics: dict[str, Any]
    role: str = ""  # "" for the actor, "critic" for ``critic-step N:``
    time: str | None = None  # log timestamp text as printed
    ts: float | None = None  # the same as seconds (naive local time read as UTC)
    proc: str | None = None  # logger process name, e.g. actor_cell0_rank0
    source: str | None = None  # file.py that logged it
    actor: str | None = None  # Ray actor class from the prefix
    line_no: int = 0  # 1-based physical line where it started
    nonfinite: dict[str, str] = field(default_factory=dict)  # key -> raw token (nan, inf)
    abridged: bool = False  # ``, ...}`` in the text
    cut: bool = False  # the dict never closed: only the pairs before the cut
    repeated: int = 0  # Ray dedup count


@dataclass(slots=True)
class Event:
    """A non-metric line (or group of lines) that matters for health."""

    kind: str
    time: str | None
    ts: float | None
    line_no: int
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    # tracebacks: every line (a list then); other events share the empty tuple (a long run has a
    # weight update event or two per rollout: an empty list each was ~4 MB of a 1 GB log's store)
    lines: list[str] | tuple[()] = ()


Item = MetricRecord | Event
