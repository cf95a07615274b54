"""Read speed of the TensorBoard events reader (grpo_tui.sidecar.tensorboard) on a Miles-shaped run folder.

Writes a folder as Miles' `_TensorboardAdapter` leaves it: one events file per process (the train actor's
train/* keys at every train step, the rollout manager's rollout/* and perf/* keys at every rollout id, an
empty one from the driver), one simple_value Event per key, then reads the whole folder with
`EventsFolderTail` (best of --repeat) and prints events/s and the time against `grep -c` and `wc -c` of the
same files in the same run.

    .venv/bin/python benchmarks/tensorboard_read.py --rollouts 10000
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import tempfile
import time

from grpo_tui.sidecar.tensorboard import EventsFolderTail, frame, scalar_event, version_event

TRAIN_KEYS = [
    "train/loss",
    "train/pg_loss",
    "train/entropy_loss",
    "train/pg_clipfrac",
    "train/ppo_kl",
    "train/ess_ratio",
    "train/train_rollout_logprob_abs_diff",
    "train/grad_norm",
    "train/lr-pg_0",
]
ROLLOUT_KEYS = [
    "rollout/response_lengths",
    "rollout/rewards",
    "rollout/truncated",
    "rollout/rollout_log_probs",
    "rollout/raw_reward",
    "rollout/total_lengths",
    "rollout/ref_log_probs",
    "rollout/log_probs",
    "rollout/advantages",
    "rollout/returns",
    "rollout/response_len/mean",
    "rollout/response_len/median",
    "rollout/response_len/max",
    "rollout/response_len/min",
    "rollout/zero_std/count_0",
    "rollout/zero_std/count_1",
    "rollout/zero_std/all_zero_percentage",
    "rollout/zero_std/all_one_percentage",
    "rollout/prefix_cache_hit_rate",
    "rollout/avg_cached_tokens_per_sample",
    "rollout/repetition_frac",
    "rollout/truncated_ratio",
    "rollout/weight_version/mean",
    "rollout/weight_version/median",
    "rollout/weight_version/max",
    "rollout/weight_version/min",
    "rollout/weight_version/mixed_version_ratio",
    "perf/rollout_time",
    "perf/tokens_per_gpu_per_sec",
    "perf/longest_sample_tokens_per_sec",
    "perf/effective_tokens_per_gpu_per_sec",
    "perf/longest_effective_sample_tokens_per_sec",
]


def write_folder(folder: str, rollouts: int, k: int, seed: int = 1) -> int:
    """The folder of a `rollouts`-long run with `k` train steps per rollout; returns the events written."""
    rng = random.Random(seed)
    t0 = 1.7e9
    names = ["driver", "train", "rollout"]  # pids 100, 101, 102 as in the fixtures
    with contextlib.ExitStack() as stack:
        files = {
            n: stack.enter_context(
                open(os.path.join(folder, f"events.out.tfevents.1700000000.node0.{100 + i}.0"), "wb")
            )
            for i, n in enumerate(names)
        }
        count = 0
        for f in files.values():
            f.write(frame(version_event(t0)))
        for r in range(rollouts):
            wall = t0 + r * 60.0
            out = [frame(scalar_event(key, rng.random() * 100, r, wall + rng.random())) for key in ROLLOUT_KEYS]
            files["rollout"].write(b"".join(out))
            count += len(out)
            for j in range(k):
                step = r * k + j
                out = [frame(scalar_event(key, rng.random(), step, wall + 30 + j)) for key in TRAIN_KEYS]
                files["train"].write(b"".join(out))
                count += len(out)
    return count


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=3, help="train steps per rollout")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--folder", help="read this folder instead of writing one")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or tmp
        if not args.folder:
            t = time.perf_counter()
            n = write_folder(folder, args.rollouts, args.k)
            print(f"wrote {n:,} events in {time.perf_counter() - t:.1f} s")
        paths = sorted(os.path.join(folder, p) for p in os.listdir(folder))
        size = sum(os.path.getsize(p) for p in paths)
        got = 0
        reads, cpus, greps, wcs = [], [], [], []
        for _ in range(args.repeat):  # interleaved rounds: a slow spell of the machine moves all three
            c = time.process_time()
            t = time.perf_counter()
            got = sum(len(s) for _, s in EventsFolderTail(folder).read())
            reads.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            greps.append(
                timed(
                    lambda: subprocess.run(
                        ["grep", "-c", "-a", "train/grad_norm", *paths], capture_output=True, check=False
                    )
                )
            )
            wcs.append(timed(lambda: subprocess.run(["wc", "-c", *paths], capture_output=True, check=False)))
        best, g, w = min(reads), min(greps), min(wcs)
        print(f"{len(paths)} files, {size / 1e6:.1f} MB, {got:,} scalar points")
        print(
            f"read: best {best * 1000:.0f} ms of {args.repeat} (median {sorted(reads)[len(reads) // 2] * 1000:.0f} ms, CPU best {min(cpus) * 1000:.0f} ms)"
        )
        print(f"      {got / best / 1e6:.2f} M events/s, {size / best / 1e6:.0f} MB/s")
        print(
            f"grep -c: {g * 1000:.0f} ms -> read = {best / g:.1f}x grep;  wc -c: {w * 1000:.0f} ms -> read = {best / w:.1f}x wc"
        )
        if not args.folder:
            print(
                f"live: one more rollout per call, median {live_call(folder, args.k) * 1e6:.0f} us per read of the folder"
            )


def live_call(folder: str, k: int, calls: int = 200) -> float:
    """The cost of a read of a followed folder when each writer has added one rollout's records."""
    tail = EventsFolderTail(folder)
    tail.read()
    rng = random.Random(2)
    train, rollout = (os.path.join(folder, f"events.out.tfevents.1700000000.node0.{pid}.0") for pid in (101, 102))
    times = []
    for r in range(calls):
        with open(rollout, "ab") as f:
            f.write(b"".join(frame(scalar_event(key, rng.random(), r, 2e9 + r)) for key in ROLLOUT_KEYS))
        with open(train, "ab") as f:
            f.write(
                b"".join(
                    frame(scalar_event(key, rng.random(), r * k + j, 2e9 + r)) for j in range(k) for key in TRAIN_KEYS
                )
            )
        t = time.perf_counter()
        tail.read()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


if __name__ == "__main__":
    main()
