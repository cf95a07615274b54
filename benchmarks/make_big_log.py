"""Write a large realistic Miles log (~97 % noise lines) for the parse benchmark.

A block is simulated once (grpo_tui.simulate, healthy run, many noise lines per rollout) and
written again and again with the rollout/step ids shifted, so the result reads as one long run.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grpo_tui.simulate import generate  # noqa: E402

_ID = re.compile(r"\b(rollout|perf|step|eval) (\d+): ")


def make(path: str, size: int, noise: int = 250, block_rollouts: int = 200) -> int:
    lines = [line for _, line in generate("healthy", block_rollouts, 1, noise_per_rollout=noise)]
    head = [line for line in lines[:40] if line.startswith("EXEC:")]
    body = [line for line in lines if not line.startswith("EXEC:")]
    # the launcher's `Job '...' succeeded` banner ends the run: once, at the very end (a run
    # that "finishes" every block would be judged as finished-then-continued)
    j = next((i for i, line in enumerate(body) if line.startswith("Job '")), None)
    footer: list[str] = []
    if j is not None:
        lo = j - 1 if j > 0 and body[j - 1].startswith("---") else j
        hi = j + 2 if j + 1 < len(body) and body[j + 1].startswith("---") else j + 1
        footer, body = body[lo:hi], body[:lo] + body[hi:]
    block = "\n".join(body) + "\n"
    written = 0
    rep = 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for line in head:
            fh.write(line + "\n")
        while written < size:
            shift = rep * block_rollouts
            text = block if rep == 0 else _ID.sub(lambda m: f"{m.group(1)} {int(m.group(2)) + shift}: ", block)
            data = text.encode()
            fh.write(text)
            written += len(data)
            rep += 1
        for line in footer:
            fh.write(line + "\n")
            written += len(line) + 1
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--size-mb", type=int, default=1000)
    ap.add_argument("--noise", type=int, default=250, help="noise lines per rollout")
    a = ap.parse_args()
    n = make(a.path, a.size_mb * 1_000_000, a.noise)
    print(f"wrote {a.path}: {n / 1e6:.0f} MB")
