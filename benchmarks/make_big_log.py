"""Write a large realistic Miles log (~97 % noise lines) for the parse benchmark.

A block is simulated once (grpo_tui.simulate, healthy run, many noise lines per rollout) and
written again and again with the rollout/step ids shifted, so the result reads as one long run.

`--cluster` writes the traits of a big multi-node run's log that make `check` and `export` work
hardest: Ray's `[repeated Nx across cluster]` suffix (after its colour code) on most noise lines,
a `Memory-Usage ...: {...}` dict from every rank at every rollout, fewer noise lines per rollout
(a 512 MB log holds ~16,000 rollouts), and a cut share that leaves its band for 4 rollouts in
every 11, so its range warning opens and clears ~1,450 times.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grpo_tui.simulate import generate

_ID = re.compile(r"\b(rollout|perf|step|eval) (\d+): ")


# Noise that names what the parser looks for ("step:", "{'", ": {", " ...", "checkpoint", "ft ",
# "wandb", "Error") without being a record or an event: SGLang lines, Miles logger lines and
# bare/prefixed lines with no header (tqdm bars, warnings).  Each is a candidate the scanner must
# look at closer; `anchored` puts one in place of that share of the SGLang noise lines.
_ANCHORED = [
    "{sglang} Decode batch (global step: {i}), #running-req: 3, #token: 1550, cuda graph: True",
    "{sglang} Prefill batch. {{'bs': 2, 'new_tokens': {i}}}, #queue-req: 0",
    "{sglang} Cache stats: {{'hit_rate': 0.{i}}}",
    "{sglang} Loading checkpoint shards ... {i}/4",
    "{sglang} Scheduler draft tokens left {i} (spec decode)",
    "{miles} model.py:635 - Loading checkpoint shards ... done ({i} s)",
    "{miles} sync.py:88 - wandb sync pending, step: {i}",
    "{miles} engine.py:41 - Error budget ok: {{'errors': 0, 'step': {i}}}",
    "{ray}Loading checkpoint shards: 100%|##########| 4/4 [00:0{d}<00:00, 1.2it/s]",
]
_DEDUP = "\x1b[32m [repeated 7x across cluster]\x1b[0m"
_TRAIN_ROLLOUT = re.compile(r"^(.*?)\[([^\]]+) actor_cell0_rank0\] log_utils\.py:\d+ - rollout \d+: ")
_CUT = re.compile(r"(\brollout (\d+): \{[^\n]*?'rollout/truncated': )([-0-9.e+]+)")
FLAP_PERIOD, FLAP_WIDTH, FLAP_CUT = 11, 4, 0.6  # rollouts n with n % 11 in 4..7: cut share 0.6


def _cluster(body: list[str]) -> list[str]:
    """The block as a multi-node run prints it: every rank's Memory-Usage dict after each trainer
    rollout line, and Ray's dedup suffix on 3 in 5 of the other noise lines."""
    out = []
    for i, line in enumerate(body):
        if _ID.search(line) is None and not line.startswith("Job '") and "across cluster]" not in line and i % 5 < 3:
            line += _DEDUP
        out.append(line)
        m = _TRAIN_ROLLOUT.match(line)
        if m is not None:
            pre, stamp = m.group(1), m.group(2)
            for r in range(8):
                free = 70.3 + r * 0.013
                stats = {"gpu": str(r), "total_GB": 79.19, "free_GB": round(free, 2), "used_GB": round(79.19 - free, 2)}
                out.append(
                    f"{pre}[{stamp} actor_cell0_rank{r}] memory_utils.py:41 - [Rank {r}] Memory-Usage "
                    f"after train step: {stats}" + (_DEDUP if r else "")
                )
    return out


def _flap(text: str) -> str:
    """The cut share of rollouts n with n % FLAP_PERIOD in [FLAP_WIDTH, 2 * FLAP_WIDTH) set to FLAP_CUT."""

    def put(m: re.Match) -> str:
        n = int(m.group(2))
        return m.group(1) + (repr(FLAP_CUT) if FLAP_WIDTH <= n % FLAP_PERIOD < 2 * FLAP_WIDTH else m.group(3))

    return _CUT.sub(put, text)


WARM = 200  # rollouts a healthy block's run learns before its plateau (the simulator's: ~100)
_SGLANG_HEAD = re.compile(r"^((?:\x1b\[36m)?\((?:SGLangEngine|sglang)[^)]*\)(?:\x1b\[0m)? )\[([^\]]+)\] Decode batch")


def _anchor_noise(body: list[str], share: float) -> list[str]:
    """That share of the SGLang decode lines replaced by anchored noise lines (_ANCHORED, in turn),
    with the same Ray prefix and time."""
    out, k, acc = [], 0, 0.0
    for line in body:
        m = _SGLANG_HEAD.match(line)
        if m is not None:
            acc += share
            if acc >= 1.0:
                acc -= 1.0
                pre, stamp = m.group(1), m.group(2)
                form = _ANCHORED[k % len(_ANCHORED)]
                line = form.format(
                    sglang=f"{pre}[{stamp}]", miles=f"{pre}[{stamp} rollout_manager]", ray=pre, i=k % 997, d=k % 10
                )
                k += 1
        out.append(line)
    return out


def make(
    path: str,
    size: int,
    noise: int = 250,
    block_rollouts: int = 200,
    scenario: str = "healthy",
    anchored: float = 0.0,
    cluster: bool = False,
) -> int:
    """`scenario` other than healthy: a broken run whose sign stays for the rest of the file
    (the first block breaks halfway, every later block is the same run broken from its start),
    so its alert is held open over nearly every rollout - `check`'s costliest case.  `anchored`:
    the share of SGLang noise lines that carry an anchor (_ANCHORED): a log whose noise makes the
    scanner look closer at many lines, as real ones can.  `cluster`: see the module's docstring."""
    first = None
    onset = None
    warm = 0
    if scenario != "healthy":
        first = _body(generate(scenario, block_rollouts, 1, noise_per_rollout=noise, onset=block_rollouts // 2))[1]
        onset = 0
    else:
        # A healthy run learns, then holds a plateau: the block repeated is from the plateau, after
        # WARM rollouts written once, so no seam between blocks looks like learning starting over
        # (a jump in length and reward that judging would take for length-hacking).
        warm = WARM
    lines = [line for _, line in generate(scenario, warm + block_rollouts, 1, noise_per_rollout=noise, onset=onset)]
    head = [line for line in lines[:40] if line.startswith("EXEC:")]
    footer, body = _body((0.0, line) for line in lines)
    if warm:
        cut = next(i for i, line in enumerate(body) if (m := _ID.search(line)) and int(m.group(2)) >= warm)
        first, body = body, body[cut:]  # the first block: the warm-up and the plateau once
    if anchored:
        body = _anchor_noise(body, anchored)
        first = None if first is None else _anchor_noise(first, anchored)
    if cluster:
        body = _cluster(body)
        first = None if first is None else _cluster(first)
    first_block = None if first is None else "\n".join(first) + "\n"
    block = "\n".join(body) + "\n"
    written = 0
    rep = 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for line in head:
            fh.write(line + "\n")
        while written < size:
            shift = rep * block_rollouts
            if rep == 0:
                text = first_block or block
            else:
                text = _ID.sub(lambda m: f"{m.group(1)} {int(m.group(2)) + shift}: ", block)
            if cluster:
                text = _flap(text)
            data = text.encode()
            fh.write(text)
            written += len(data)
            rep += 1
        for line in footer:
            fh.write(line + "\n")
            written += len(line) + 1
    return written


def _body(timed_lines) -> tuple[list[str], list[str]]:
    """(footer, body) of a simulated block: the launch left out, and the launcher's
    `Job '...' succeeded` banner taken out to end the whole file once."""
    body = [line for _, line in timed_lines if not line.startswith("EXEC:")]
    # the launcher's `Job '...' succeeded` banner ends the run: once, at the very end (a run
    # that "finishes" every block would be judged as finished-then-continued)
    j = next((i for i, line in enumerate(body) if line.startswith("Job '")), None)
    footer: list[str] = []
    if j is not None:
        lo = j - 1 if j > 0 and body[j - 1].startswith("---") else j
        hi = j + 2 if j + 1 < len(body) and body[j + 1].startswith("---") else j + 1
        footer, body = body[lo:hi], body[:lo] + body[hi:]
    return footer, body


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--size-mb", type=int, default=1000)
    ap.add_argument("--noise", type=int, default=None, help="noise lines per rollout (250; --cluster: 150)")
    ap.add_argument("--scenario", default="healthy", help="a broken run held to the end, e.g. gap-jump")
    ap.add_argument(
        "--anchored",
        type=float,
        default=0.0,
        help="share of the SGLang noise lines that carry an anchor (0-1), e.g. 0.3",
    )
    ap.add_argument("--cluster", action="store_true", help="a multi-node run's traits (see the docstring)")
    a = ap.parse_args()
    noise = a.noise if a.noise is not None else 150 if a.cluster else 250
    n = make(a.path, a.size_mb * 1_000_000, noise, scenario=a.scenario, anchored=a.anchored, cluster=a.cluster)
    print(f"wrote {a.path}: {n / 1e6:.0f} MB")
