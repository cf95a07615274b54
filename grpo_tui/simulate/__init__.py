"""Synthetic Miles/slime GRPO training logs for demos and tests.

The numbers follow the healthy baseline in docs/contracts.md §4 (Qwen3-0.6B on GSM8K, 32 prompts x 8
answers, 1024-token cap). Each broken scenario changes only the signals its rule watches, from
`onset` on, so a detector that fires on the wrong signal shows up in tests. The text follows
docs/log-format.md byte for byte: Ray prefixes with real escapes, doubled Megatron step
lines, two `perf N:` lines per rollout, `\\r`-joined tqdm bars, dedup suffixes, tracebacks.

Randomness comes from one generator per rollout and one per train step, all derived from
`seed`, so the first rollouts of a longer run equal a shorter run, and the noise lines never
shift the metric values or their timestamps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from .run import _chunks
from .series import SLOWDOWN_MAX
from .setups import FORMATS, SCENARIOS, SETUPS, Setup, onset_of, setup_of

__all__ = [
    "FORMATS",
    "SCENARIOS",
    "SETUPS",
    "SLOWDOWN_MAX",
    "Setup",
    "generate",
    "main_sample_logs",
    "onset_of",
    "setup_of",
    "write_log",
]

# ---------------------------------------------------------------- public API


def generate(
    scenario: str = "healthy",
    rollouts: int = 48,
    seed: int = 0,
    *,
    steps_per_rollout: int = 1,
    fmt: str = "miles",
    noise_per_rollout: int = 30,
    onset: int | None = None,
    start: datetime | None = None,
    setup: str = "manual",
    pace: float = 1.0,
) -> Iterator[tuple[float, str]]:
    """Yield (log_time_as_unix_seconds, physical_line_without_newline) in file order.

    The time is what the line's own header says (second resolution for SGLang and old
    formats); header-less lines carry the time they would be written. A naive `start`
    is read as UTC so the result does not depend on the machine's time zone.
    `setup` picks the training setup (SETUPS); `pace` scales how fast a trend break grows
    (0.3 = a slow drift: gap x1.035 a rollout instead of x1.12, rollout time x1.04 ...).
    """
    for chunk in _chunks(
        scenario, rollouts, seed, steps_per_rollout, fmt, noise_per_rollout, onset, start, setup, pace
    ):
        yield from chunk


def write_log(path, scenario="healthy", rollouts=48, seed=0, *, rate: float | None = None, **kw) -> None:
    """Write the whole log; with rate=SECONDS, write one rollout's lines at a time, flushing
    and sleeping `rate` between rollouts (for live demos)."""
    chunks = _chunks(
        scenario,
        rollouts,
        seed,
        kw.pop("steps_per_rollout", 1),
        kw.pop("fmt", "miles"),
        kw.pop("noise_per_rollout", 30),
        kw.pop("onset", None),
        kw.pop("start", None),
        kw.pop("setup", "manual"),
        kw.pop("pace", 1.0),
    )
    if kw:
        raise TypeError(f"unexpected arguments: {sorted(kw)}")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for i, chunk in enumerate(chunks):
            if rate and i:
                time.sleep(rate)
            fh.write("".join(line + "\n" for _, line in chunk))
            if rate:
                fh.flush()


def main_sample_logs(outdir) -> list[Path]:
    """Write the sample logs shipped with the repo (three healthy seeds, one per broken scenario)."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in (1, 2, 3):
        paths.append(out / f"healthy-seed{seed}.log")
        write_log(paths[-1], "healthy", 48, seed, noise_per_rollout=30)
    for name in SCENARIOS:
        if name != "healthy":
            paths.append(out / f"{name}.log")
            write_log(paths[-1], name, 48, 7, noise_per_rollout=20)
    return paths
