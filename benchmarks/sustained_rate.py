#!/usr/bin/env python3
"""Can `grpo-tui tail` keep up with a fast log?  Lag, latency, RSS and CPU under load.

What it measures
    A writer thread in this process appends --rate lines/s (10,000) to a temp file for
    --duration s (60; --quick 15), in batches every --batch-ms (50 ms, so 500 lines per
    os.write).  The lines are realistic Miles/SGLang noise (Ray prefix + ANSI colour,
    decode stats, health checks, timers, tqdm bars with \\r, memory dumps) with a metric
    line `rollout N: {...}` about every 30 lines (uniform 25..35), N = 1, 2, 3, ...
    For each record the writer keeps the time its batch was written and the byte offset
    just after it.

    `grpo-tui tail FILE` (subprocess) follows the file; a thread reads its stdout and
    stamps each rollout record on arrival.  Every second the main thread samples:
      - lag in records: last N written - last N emitted,
      - lag in bytes:   bytes written - offset just after the last emitted record,
      - tail's RSS (VmRSS from /proc/PID/status) and CPU (utime+stime from /proc/PID/stat).
    After the writer stops, the script waits (up to --drain s) for tail to catch up and
    reports how long that took.

Output
    A table every --every s, then lag p50/max, write->emit latency p50/p95/p99/max,
    RSS at start/middle/end, lost/doubled records, tail's CPU (% of one core) while the
    writer ran, and the achieved write rate.

Usage
    python benchmarks/sustained_rate.py [--rate 10000] [--duration 60] [--batch-ms 50] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._common import (
    HZ,
    RolloutReader,
    collect_stderr,
    cpu_ticks,
    noise_line,
    parse_args,
    pct as _pct,
    record_line,
    rss_kb,
    start_tail,
    stop,
    wait_for,
)


class Writer:
    def __init__(self, path: str, seed: int) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.rng = random.Random(seed)
        self.bytes = 0
        self.lines = 0
        self.last_n = 0
        self.written: dict[int, tuple[float, int]] = {}  # N -> (write time, end offset)
        self.next_gap = self.rng.randint(25, 35)
        self.behind_max = 0.0
        self.stop = threading.Event()

    def batch(self, nlines: int) -> None:
        now = datetime.now()
        ts = now.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        ts_s = ts[:-4]
        rng = self.rng
        parts: list[bytes] = []
        size = self.bytes
        pending: list[tuple[int, int]] = []
        for _ in range(nlines):
            self.next_gap -= 1
            if self.next_gap <= 0:
                self.last_n += 1
                b = record_line(self.last_n, rng, ts).encode()
                self.next_gap = rng.randint(25, 35)
                size += len(b)
                pending.append((self.last_n, size))
            else:
                b = noise_line(rng, ts, ts_s, decode_weight=2).encode()
                size += len(b)
            parts.append(b)
        data = b"".join(parts)
        t = time.perf_counter()
        for n, off in pending:
            self.written[n] = (t, off)
        os.write(self.fd, data)
        self.bytes = size
        self.lines += nlines

    def run(self, rate: float, duration: float, batch_s: float) -> None:
        per = rate * batch_s
        t0 = time.perf_counter()
        self.t0 = t0
        k = 0
        owed = 0.0
        while not self.stop.is_set():
            target = t0 + k * batch_s
            if target - t0 >= duration:
                break
            d = target - time.perf_counter()
            if d > 0:
                time.sleep(d)
            else:
                self.behind_max = max(self.behind_max, -d)
            owed += per
            n = int(owed)
            owed -= n
            self.batch(n)
            k += 1
        self.t_end = time.perf_counter()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=10000, help="lines per second (default 10000)")
    ap.add_argument("--duration", type=float, default=60, help="seconds of writing (default 60)")
    ap.add_argument("--batch-ms", type=float, default=50, help="ms between writes (default 50)")
    ap.add_argument("--drain", type=float, default=60, help="max s to wait for tail to catch up")
    ap.add_argument("--every", type=int, default=5, help="print a table row every N s (default 5)")
    ap.add_argument("--seed", type=int, default=1)
    args = parse_args(ap, "15 s of writing", "duration", 15)

    with tempfile.TemporaryDirectory(prefix="grpo-rate-") as d:
        path = os.path.join(d, "train.log")
        open(path, "wb").close()
        proc = start_tail(path)
        rd = RolloutReader(proc)
        arrivals = rd.arrivals
        errs = collect_stderr(proc)

        w = Writer(path, args.seed)
        # warm-up: one record 0, wait until tail prints it
        b = record_line(0, w.rng).encode()
        os.write(w.fd, b)
        w.bytes += len(b)
        if not wait_for(lambda: 0 in arrivals, 20):
            proc.kill()
            raise SystemExit(f"tail never printed the warm-up record; stderr: {errs}")
        time.sleep(0.5)

        print(
            f"sustained_rate: {args.rate:.0f} lines/s for {args.duration:.0f} s in batches every "
            f"{args.batch_ms:.0f} ms (record every ~30 lines); tail pid {proc.pid}, "
            f"{os.cpu_count()} cpus"
        )
        print(
            f"{'t(s)':>5} {'written N':>9} {'emitted N':>9} {'lag rec':>7} {'lag KB':>8} "
            f"{'MB written':>10} {'RSS MB':>7} {'cpu% (1s)':>9}"
        )
        samples = []  # (t, lagrec, lagbytes, rss_kb, cpu%)
        cpu_start = cpu_ticks(proc.pid)
        wt = threading.Thread(target=w.run, args=(args.rate, args.duration, args.batch_ms / 1000), daemon=True)
        t0 = time.perf_counter()
        wt.start()
        prev_cpu, prev_t = cpu_start, t0
        i = 0
        draining_since = None
        drain_done = None
        while True:
            i += 1
            target = t0 + i
            time.sleep(max(0.0, target - time.perf_counter()))
            now = time.perf_counter()
            if proc.poll() is not None:
                print(f"!! tail exited with rc {proc.returncode}: {errs[-5:]}")
                break
            wn, en = w.last_n, rd.last_n
            wbytes = w.bytes
            ebytes = w.written[en][1] if en in w.written else 0
            lag_b = max(0, wbytes - ebytes)
            c = cpu_ticks(proc.pid)
            cpu = (c - prev_cpu) / HZ / (now - prev_t) * 100
            prev_cpu, prev_t = c, now
            rss = rss_kb(proc.pid)
            writing = wt.is_alive()
            if writing:
                samples.append((i, wn - en, lag_b, rss, cpu))
            elif draining_since is None:
                draining_since = now
                cpu_writing = (c - cpu_start) / HZ / (w.t_end - w.t0) * 100
            if (writing and i % args.every == 0) or not writing:
                print(
                    f"{i:5d} {wn:9d} {en:9d} {wn - en:7d} {lag_b / 1024:8.1f} {wbytes / 1e6:10.1f} "
                    f"{rss / 1024:7.1f} {cpu:9.1f}" + ("" if writing else "  (writer stopped)")
                )
            if not writing:
                if en >= wn:
                    drain_done = now - w.t_end
                    break
                if now - draining_since > args.drain:
                    break
        time.sleep(0.5)  # late doubles
        rss_end = rss_kb(proc.pid) if proc.poll() is None else 0
        stop(proc, timeout=10)

    total = w.last_n
    lost = sum(1 for n in range(1, total + 1) if n not in arrivals)
    doubled = sum(1 for n in range(1, total + 1) if len(arrivals.get(n, ())) > 1)
    lat = [(arrivals[n][0] - w.written[n][0]) * 1000 for n in range(1, total + 1) if n in arrivals]
    wall = w.t_end - w.t0
    print()
    print(
        f"writer: {w.lines} lines, {w.bytes / 1e6:.1f} MB, {total} records in {wall:.1f} s = "
        f"{w.lines / wall:.0f} lines/s, {w.bytes / 1e6 / wall:.2f} MB/s (max behind schedule "
        f"{w.behind_max * 1000:.0f} ms)"
    )
    lr = [s[1] for s in samples]
    lb = [s[2] / 1024 for s in samples]
    print(f"lag (records):  p50 {_pct(lr, 50):.0f}  p95 {_pct(lr, 95):.0f}  max {max(lr, default=0)}")
    print(f"lag (KB):       p50 {_pct(lb, 50):.1f}  p95 {_pct(lb, 95):.1f}  max {max(lb, default=0):.1f}")
    if samples:
        half = len(samples) // 2
        first = [s[1] for s in samples[:half]]
        second = [s[1] for s in samples[half:]]
        print(
            f"lag trend:      mean first half {sum(first) / max(1, len(first)):.1f} rec, "
            f"second half {sum(second) / max(1, len(second)):.1f} rec"
        )
    print(
        f"latency write->emit: p50 {_pct(lat, 50):.0f}  p95 {_pct(lat, 95):.0f}  "
        f"p99 {_pct(lat, 99):.0f}  max {max(lat, default=float('nan')):.0f} ms"
    )
    if samples:
        r0, rm, r1 = samples[0][3], samples[len(samples) // 2][3], samples[-1][3]
        print(
            f"RSS: start {r0 / 1024:.1f} MB, middle {rm / 1024:.1f} MB, end {r1 / 1024:.1f} MB "
            f"(after drain {rss_end / 1024:.1f} MB); growth {(r1 - r0) / 1024:+.1f} MB "
            f"= {(r1 - r0) / max(1, total) * 1024:.0f} bytes/record"
        )
    if draining_since is not None:
        print(f"tail CPU while writing: {cpu_writing:.1f} % of one core")
    if drain_done is not None and total in arrivals:
        # precise: when the last written record arrived, relative to the writer's last write
        print(
            f"catch-up after writer stopped: last record emitted "
            f"{(arrivals[total][0] - w.t_end) * 1000:.0f} ms after the last write"
        )
    else:
        print(f"catch-up after writer stopped: NOT caught up within {args.drain:.0f} s")
    print(
        f"records: written {total}, lost {lost}, doubled {doubled}; other tail output: "
        f"{dict(sorted(rd.other.items()))}" + (f"; unparsable lines {rd.bad}" if rd.bad else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
