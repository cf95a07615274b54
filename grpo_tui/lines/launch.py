"""Launch flags: read from the launcher's `EXEC:` line (or the Megatron argument dump).

They give the number of groups per rollout (zero-std fraction) and K, the optimizer steps
per rollout (which rollout a `step N:` line belongs to).
"""

from __future__ import annotations

import re

_FLAG = re.compile(r"(?:^|\s)--(?P<name>[A-Za-z][\w-]*)(?:[= ](?P<value>(?!--)[^\s'\"]+|'[^']*'|\"[^\"]*\"))?")

# Names in the Megatron argument dump (`  rollout_batch_size ........ 32`) worth keeping.
ARG_DUMP_NAMES = frozenset({
    "rollout_batch_size", "n_samples_per_prompt", "global_batch_size", "num_steps_per_rollout",
    "rollout_max_response_len", "num_rollout", "eval_interval", "save_interval",
    "use_dynamic_global_batch_size", "wandb_always_use_train_step",
})

WATCHED = ("rollout-batch-size", "n-samples-per-prompt", "global-batch-size",
           "num-steps-per-rollout", "rollout-max-response-len", "num-rollout")


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
    except (ValueError, OverflowError):     # `--rollout-batch-size 1e999`, a 400-digit value
        return None


def steps_per_rollout(flags: dict) -> int | None:
    """K from `--num-steps-per-rollout`, else rollout batch × samples ÷ global batch."""
    k = _int(flags, "num-steps-per-rollout")
    if k and k > 0:
        return k
    rbs, n, gbs = (_int(flags, "rollout-batch-size"), _int(flags, "n-samples-per-prompt"),
                   _int(flags, "global-batch-size"))
    if rbs and n and gbs and gbs > 0:
        return max(1, (rbs * n) // gbs)
    return None


def groups_per_rollout(flags: dict) -> int | None:
    """Prompt groups per rollout = `--rollout-batch-size`."""
    return _int(flags, "rollout-batch-size")


def arg_dump_to_flag(name: str) -> str:
    return name.replace("_", "-")
