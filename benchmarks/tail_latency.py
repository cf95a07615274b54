#!/usr/bin/env python3
"""Write -> emit latency of `grpo-tui tail` on a paced, growing log.

What it measures
    A temp log file is followed by `grpo-tui tail FILE` (a subprocess).  A writer in this
    process appends, every --pace seconds, one realistic Miles metric line
    (Ray prefix with ANSI colour, `[date time actor] log_utils.py:123 - rollout N: {...}`),
    with a few noise lines (SGLang decode stats, health checks, timers, tqdm bars with \\r)
    written half a period later.  Each record has a unique rollout number N, and the
    writer keeps a map N -> time the line became complete (taken with time.perf_counter()
    just before the os.write() of its last byte, so the figure is slightly conservative).
    A thread reads tail's stdout and stamps each {"type":"record","kind":"rollout","n":N}
    line on arrival with the same clock.  Latency = arrival - completion.

    With --partial every record line is written in 2-3 pieces with small random gaps
    (--gap-ms) in between, as a process writing through a small buffer would; latency is
    still measured from the last piece (the first moment the line can be emitted).

Reference (same run, same schedule, same seed)
    grpo_tui.follow.follower.Follower in this process, on another temp file: the time from the
    write to the Lines batch that holds the record.  The difference is tail's own cost
    (parse + store + rules + JSON + pipe) on top of the file-watching floor.

Output
    p50/p95/p99/max/mean latency in ms, lost and doubled record counts, and the ratio
    tail/follower.  Bar: tail p95 <= 250 ms (goal 150 ms).

Usage
    python benchmarks/tail_latency.py [--records 200] [--pace 0.1] [--partial] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._common import (
    REPO,
    RolloutReader,
    collect_stderr,
    noise_line,
    parse_args,
    pct as _pct,
    record_line,
    start_tail,
    stop,
    wait_for as _wait_for,
)


def _ensure_env() -> None:
    """Import grpo_tui (and watchfiles) from the repo; re-exec under the venv if needed."""
    sys.path.insert(0, str(REPO))
    try:
        import grpo_tui.follow.follower  # noqa: F401
    except ImportError:
        venv_py = REPO / ".venv" / "bin" / "python"
        if venv_py.exists() and Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
            os.execv(str(venv_py), [str(venv_py), *sys.argv])
        raise


_ensure_env()
from grpo_tui.follow.follower import Follower, Lines  # noqa: E402


def _sleep_until(t: float) -> None:
    while True:
        d = t - time.perf_counter()
        if d <= 0:
            return
        time.sleep(min(d, 0.05))


class Writer:
    """Appends the paced schedule to one file; written[N] = completion time."""

    def __init__(self, path: str, seed: int, partial: bool, gap_ms: float) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.rng = random.Random(seed)
        self.partial = partial
        self.gap_ms = gap_ms
        self.written: dict[int, float] = {}

    def record(self, n: int) -> None:
        data = record_line(n, self.rng).encode()
        if self.partial:
            parts = self.rng.choice((2, 3))
            cuts = sorted(self.rng.sample(range(1, len(data) - 1), parts - 1))
            pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
            for piece in pieces[:-1]:
                os.write(self.fd, piece)
                time.sleep(self.rng.uniform(0.2, 1.0) * self.gap_ms / 1000)
            data = pieces[-1]
        self.written[n] = time.perf_counter()
        os.write(self.fd, data)

    def noise(self, k: int) -> None:
        if k:
            os.write(self.fd, "".join(noise_line(self.rng) for _ in range(k)).encode())

    def run(self, first: int, count: int, pace: float) -> None:
        t0 = time.perf_counter() + 0.05
        for i in range(count):
            _sleep_until(t0 + i * pace)
            self.record(first + i)
            _sleep_until(t0 + i * pace + pace / 2)
            self.noise(self.rng.randrange(0, 4))

    def close(self) -> None:
        os.close(self.fd)


# ----------------------------------------------------------------------------- tail (subprocess)
def run_tail(path: str, args) -> dict:
    proc = start_tail(path, python=sys.executable)
    rd = RolloutReader(proc)
    arrivals = rd.arrivals
    stderr_lines = collect_stderr(proc)
    w = Writer(path, args.seed, args.partial, args.gap_ms)
    try:
        # warm-up: the follower is running and has read the file once
        w.noise(3)
        w.record(0)
        if not _wait_for(lambda: 0 in arrivals, 15):
            raise SystemExit(f"tail never emitted the warm-up record; stderr: {stderr_lines}")
        time.sleep(0.5)
        w.run(1, args.records, args.pace)
        _wait_for(lambda: all(n in arrivals for n in range(1, args.records + 1)), 3.0)
        time.sleep(0.3)  # let doubles show up
    finally:
        w.close()
        stop(proc)
        rd.thread.join(2)
    other = dict(rd.other)
    if rd.bad:
        other["bad-json"] = rd.bad
    return _summary(w.written, arrivals, args.records, other, proc.returncode)


# ----------------------------------------------------------------------------- Follower (in-process)
def run_follower(path: str, args) -> dict:
    arrivals: dict[int, list[float]] = {}
    rx = re.compile(r" - rollout (\d+): \{")
    state: dict = {}
    ready = threading.Event()

    async def main() -> None:
        f = Follower(path, from_start=True)
        state["loop"] = asyncio.get_running_loop()
        state["f"] = f
        ready.set()
        async for item in f:
            if isinstance(item, Lines):
                t = time.perf_counter()
                for line in item.lines:
                    if " - rollout " in line:
                        m = rx.search(line)
                        if m:
                            arrivals.setdefault(int(m.group(1)), []).append(t)

    th = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    th.start()
    ready.wait(5)
    w = Writer(path, args.seed, args.partial, args.gap_ms)
    try:
        w.noise(3)
        w.record(0)
        if not _wait_for(lambda: 0 in arrivals, 15):
            raise SystemExit("Follower never yielded the warm-up record")
        time.sleep(0.5)
        w.run(1, args.records, args.pace)
        _wait_for(lambda: all(n in arrivals for n in range(1, args.records + 1)), 3.0)
        time.sleep(0.3)
    finally:
        w.close()
        state["loop"].call_soon_threadsafe(state["f"].stop)
        th.join(5)
    return _summary(w.written, arrivals, args.records, {}, 0)


def _summary(
    written: dict[int, float], arrivals: dict[int, list[float]], count: int, other: dict[str, int], rc
) -> dict:
    lat = []
    lost = doubled = 0
    for n in range(1, count + 1):
        got = arrivals.get(n, [])
        if not got:
            lost += 1
            continue
        if len(got) > 1:
            doubled += 1
        lat.append((got[0] - written[n]) * 1000)
    extra = sorted(n for n in arrivals if n > count or n < 0)
    lat.sort()
    return {"lat": lat, "lost": lost, "doubled": doubled, "unexpected": extra, "other": other, "rc": rc}


def _line(name: str, s: dict) -> str:
    lat = s["lat"]
    mean = sum(lat) / len(lat) if lat else float("nan")
    return (
        f"{name:<22} n={len(lat):4d}  p50={_pct(lat, 50):7.1f}  p95={_pct(lat, 95):7.1f}  "
        f"p99={_pct(lat, 99):7.1f}  max={(lat[-1] if lat else float('nan')):7.1f}  mean={mean:7.1f} ms"
        f"   lost={s['lost']} doubled={s['doubled']}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200, help="measured records (default 200)")
    ap.add_argument("--pace", type=float, default=0.1, help="seconds between records (default 0.1)")
    ap.add_argument("--partial", action="store_true", help="write each record line in 2-3 pieces")
    ap.add_argument("--gap-ms", type=float, default=15.0, help="max gap between pieces (default 15)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-reference", action="store_true", help="skip the in-process Follower run")
    args = parse_args(ap, "50 records", "records", 50)

    print(
        f"tail_latency: {args.records} records every {args.pace * 1000:.0f} ms, "
        f"partial writes={'yes (2-3 pieces, gaps <= %.0f ms)' % args.gap_ms if args.partial else 'no'}, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    with tempfile.TemporaryDirectory(prefix="grpo-tail-lat-") as d:
        t = run_tail(os.path.join(d, "train.log"), args)
        f = None if args.no_reference else run_follower(os.path.join(d, "ref.log"), args)
    print(_line("grpo-tui tail", t))
    if f is not None:
        print(_line("Follower (reference)", f))
        fp50, fp95 = _pct(f["lat"], 50), _pct(f["lat"], 95)
        tp50, tp95 = _pct(t["lat"], 50), _pct(t["lat"], 95)
        print(
            f"tail overhead vs Follower: p50 +{tp50 - fp50:.1f} ms (x{tp50 / fp50:.2f}), "
            f"p95 +{tp95 - fp95:.1f} ms (x{tp95 / fp95:.2f})"
        )
    if t["other"]:
        print(f"other tail output: {dict(sorted(t['other'].items()))}")
    if t["unexpected"]:
        print(f"unexpected record numbers: {t['unexpected'][:20]}")
    p95 = _pct(t["lat"], 95)
    verdict = "PASS" if p95 <= 250 else "FAIL"
    goal = "meets" if p95 <= 150 else "misses"
    print(f"bar p95 <= 250 ms: {verdict} ({p95:.1f} ms; {goal} the 150 ms goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
