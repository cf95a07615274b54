"""Launch flags: read from the launcher's `EXEC:` line (or the Megatron argument dump).

They give the number of groups per rollout (zero-std fraction) and K, the optimizer steps
per rollout (which rollout a `step N:` line belongs to).
"""

from __future__ import annotations

import re

_FLAG = re.compile(r"(?:^|\s)--(?P<name>[A-Za-z][\w-]*)(?:[= ](?P<value>(?!--)[^\s'\"]+|'[^']*'|\"[^\"]*\"))?")

# Names in the Megatron argument dump (`  rollout_batch_size ........ 32`) worth keeping.
ARG_DUMP_NAMES = frozenset(
    {
        "rollout_batch_size",
        "n_samples_per_prompt",
        "global_batch_size",
        "num_steps_per_rollout",
        "rollout_max_response_len",
        "num_rollout",
        "eval_interval",
        "save_interval",
        "use_dynamic_global_batch_size",
        "wandb_always_use_train_step",
    }
)

WATCHED = (
    "rollout-batch-size",
    "n-samples-per-prompt",
    "global-batch-size",
    "num-steps-per-rollout",
    "rollout-max-response-len",
    "num-rollout",
)


def parse_launch_flags(text: str) -> dict[str, str | bool]:
    """Every `--flag value` (or bare `--flag`) after the train script, last one wins."""
    idx = max(text.find("train.py"), text.find("train_async.py"))
    tail = text[idx:] if idx >= 0 else text
    flags: dict[str, str | bool] = {}
    for m in _FLAG.finditer(tail):
        value = m.group("value")
        flags[m.group("name")] = value.strip("'\"") if value is not None else True
    return flags


def _int(flags: dict, name: str) -> int | None:
    v = flags.get(name)
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(float(v))
    except (ValueError, OverflowError):  # `--rollout-batch-size 1e999`, a 400-digit value
        return None


def steps_per_rollout(flags: dict) -> int | None:
    """K from `--num-steps-per-rollout`, else rollout batch × samples ÷ global batch."""
    k = _int(flags, "num-steps-per-rollout")
    if k and k > 0:
        return k
    rbs, n, gbs = (
        _int(flags, "rollout-batch-size"),
        _int(flags, "n-samples-per-prompt"),
        _int(flags, "global-batch-size"),
    )
    if rbs and n and gbs and gbs > 0:
        return max(1, (rbs * n) // gbs)
    return None


class FlagsMemo:
    """K and the groups per rollout of one flags dict, read again only when a flag they come
    from changed.  The store asks for K at every step record, and launch and arg events write
    the dict in place; so the values they were read from are kept and compared by identity
    with the dict's current ones: any write is seen (an equal value in a new object only costs
    a re-read)."""

    __slots__ = ("_seen", "_steps", "_groups")

    def __init__(self) -> None:
        self._seen: tuple | None = None
        self._steps: int | None = None
        self._groups: int | None = None

    def _fresh(self, flags: dict) -> None:
        get = flags.get
        now = (
            get("num-steps-per-rollout"),
            get("rollout-batch-size"),
            get("n-samples-per-prompt"),
            get("global-batch-size"),
        )
        seen = self._seen
        if seen is not None and now[0] is seen[0] and now[1] is seen[1] and now[2] is seen[2] and now[3] is seen[3]:
            return
        self._steps = steps_per_rollout(flags)
        self._groups = groups_per_rollout(flags)
        self._seen = now

    def steps_per_rollout(self, flags: dict) -> int | None:
        """`steps_per_rollout(flags)`, remembered."""
        self._fresh(flags)
        return self._steps

    def groups_per_rollout(self, flags: dict) -> int | None:
        """`groups_per_rollout(flags)`, remembered."""
        self._fresh(flags)
        return self._groups


def groups_per_rollout(flags: dict) -> int | None:
    """Prompt groups per rollout = `--rollout-batch-size`."""
    return _int(flags, "rollout-batch-size")


def arg_dump_to_flag(name: str) -> str:
    return name.replace("_", "-")
