"""Pieces shared by the `grpo-tui tail` benchmarks (tail_latency, sustained_rate, idle_cpu).

Kept in one place so that the scripts write the same realistic Miles/SGLang lines and
measure the tail subprocess the same way; a change to the log shape or to how CPU/RSS is
read then reaches every benchmark at once.  Standard library only (no grpo_tui import), so
a script can import this before it has checked its environment.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HZ = os.sysconf("SC_CLK_TCK")

# ----------------------------------------------------------------------------- realistic lines
ESC = "\x1b"
RAY_ACTOR = f"{ESC}[36m(MegatronTrainRayActor pid=48479){ESC}[0m "
RAY_RM = f"{ESC}[36m(RolloutManager pid=47919){ESC}[0m "


def ray_sgl(pid: int) -> str:
    """Ray's coloured prefix for an SGLang engine; the pid varies so lines are not all alike."""
    return f"{ESC}[36m(SGLangEngine pid={pid}){ESC}[0m "


def now_ts(ms: bool = True) -> str:
    """Wall-clock stamp as Miles prints it: with milliseconds (actor lines) or without (SGLang)."""
    s = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    return s[:-3] if ms else s[:-7]


def record_line(n: int, rng: random.Random, ts: str | None = None) -> str:
    """One `rollout N: {...}` metric line; N is unique so its arrival can be matched to its write."""
    m = {
        "rollout/response_lengths": 700 + rng.random() * 80,
        "rollout/rewards": (rng.random() - 0.5) * 1e-8,
        "rollout/truncated": 0.25 + rng.random() * 0.15,
        "rollout/rollout_log_probs": -0.30 - rng.random() * 0.02,
        "rollout/raw_reward": 0.6 + rng.random() * 0.1,
        "rollout/total_lengths": 840 + rng.random() * 60,
        "rollout/ref_log_probs": -0.30 - rng.random() * 0.02,
        "rollout/log_probs": -0.30 - rng.random() * 0.02,
        "rollout/advantages": (rng.random() - 0.5) * 0.004,
        "rollout/returns": (rng.random() - 0.5) * 0.004,
    }
    if ts is None:
        ts = now_ts()
    return f"{RAY_ACTOR}[{ts} actor_cell0_rank0] log_utils.py:123 - rollout {n}: {m!r}\n"


def noise_line(rng: random.Random, ts: str | None = None, ts_s: str | None = None, decode_weight: int = 1) -> str:
    """One noise line of a random kind (decode stats, health check, timer, memory, tqdm, cell op).

    The parser has to skip these cheaply, so they carry the same prefixes and shapes as the
    real ones.  `decode_weight` makes decode-stat lines that many times as likely as each
    other kind (as on a busy SGLang engine); the draws from rng do not depend on it otherwise.
    ts / ts_s (with / without ms) default to now, so a caller writing a batch can stamp once.
    """
    k = max(0, rng.randrange(5 + decode_weight) - (decode_weight - 1))
    pid = 48099 + rng.randrange(8)
    if ts is None:
        ts = now_ts()
    if ts_s is None:
        ts_s = now_ts(False)
    if k == 0:
        return (
            f"{ray_sgl(pid)}[{ts_s}] Decode batch, #running-req: {rng.randrange(1, 128)}, "
            f"#token: {rng.randrange(500, 60000)}, token usage: {rng.random():.2f}, cuda graph: "
            f"True, gen throughput (token/s): {rng.random() * 6000:.2f}, #queue-req: 0\n"
        )
    if k == 1:
        return (
            f'{ray_sgl(pid)}[{ts_s}] INFO:     10.0.0.5:{rng.randrange(30000, 60000)} - "GET /health HTTP/1.1" 200 OK\n'
        )
    if k == 2:
        return (
            f"{RAY_ACTOR}[{ts} actor_cell0_rank0] timer.py:42 - Timer actor_train end "
            f"(elapsed: {rng.random() * 20:.1f}s)\n"
        )
    if k == 3:
        return (
            f"{RAY_ACTOR}[{ts} actor_cell0_rank0] memory_utils.py:41 - [Rank 0] Memory-Usage after "
            f"wake_up model: {{'gpu': '0', 'total_GB': 79.19, 'free_GB': {70 + rng.random():.2f}, "
            f"'used_GB': 8.89, 'allocated_GB': 2.41, 'reserved_GB': 4.0}}\n"
        )
    if k == 4:
        a = rng.randrange(256)
        return (
            f"{RAY_RM}Rollout generation:   0%|          | 0/256 [00:00<?, ?it/s]\rRollout generation:"
            f"  {a * 100 // 256}%|\u2588\u2588\u2588       | {a}/256 [00:51<00:51,  2.46it/s]\n"
        )
    return f"[{ts} main] cell.py:229 - ft op=execute phase=start cell=0 fn=train n_actors=8\n"


# ----------------------------------------------------------------------------- small utilities
def time_grep(path: str) -> tuple[float, int]:
    """The reference every speed figure is a ratio to: `grep -o` of one metric, and its matches."""
    t = time.perf_counter()
    out = subprocess.run(
        f"grep -o \"'rollout/raw_reward': [0-9.]*\" '{path}' | wc -l",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return time.perf_counter() - t, int(out.strip())


def pct(vals: list[float], p: float) -> float:
    """Nearest-rank percentile (nan when empty), so every script reports p50/p95 the same way."""
    if not vals:
        return float("nan")
    s = sorted(vals)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]


def wait_for(cond, timeout: float, step: float = 0.01) -> bool:
    """Poll cond() until true or timeout; the benchmarks wait on reader threads this way."""
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def parse_args(ap: argparse.ArgumentParser, quick_help: str, field: str, cap: float):
    """Add --quick, parse, and cap args.<field> at `cap` when it is given (a short smoke run)."""
    ap.add_argument("--quick", action="store_true", help=quick_help)
    args = ap.parse_args()
    if args.quick:
        setattr(args, field, min(getattr(args, field), cap))
    return args


# ----------------------------------------------------------------------------- the tail process
def venv_python() -> str:
    """The repo's venv interpreter if there is one, so the subprocess finds grpo_tui's deps."""
    venv_py = REPO / ".venv" / "bin" / "python"
    return str(venv_py) if venv_py.exists() else sys.executable


def start_tail(path: str, python: str | None = None, stderr=subprocess.PIPE) -> subprocess.Popen:
    """Start `grpo-tui tail PATH` from the repo, stdout piped (one JSON object a line)."""
    return subprocess.Popen(
        [python or venv_python(), "-m", "grpo_tui", "tail", path], cwd=REPO, stdout=subprocess.PIPE, stderr=stderr
    )


def stop(proc: subprocess.Popen, sig=signal.SIGINT, timeout: float = 5) -> None:
    """Ask proc to exit (SIGINT: tail's clean path), kill it if it does not within timeout."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def collect_stderr(proc: subprocess.Popen) -> list[str]:
    """Drain proc's stderr in a thread (so it cannot block on a full pipe); lines for error text."""
    lines: list[str] = []
    threading.Thread(
        target=lambda: lines.extend(x.decode(errors="replace").rstrip() for x in proc.stderr), daemon=True
    ).start()
    return lines


def other_key(obj: dict) -> str:
    """Short label for a non-record output object (event/alert), for the 'other output' counts."""
    return f"{obj.get('type')}:{obj.get('kind') or obj.get('rule') or obj.get('event')}"


class RolloutReader:
    """Reads tail's stdout in a thread and stamps each rollout record N on arrival.

    arrivals[N] lists perf_counter() times (more than one = doubled); last_n is the highest
    N seen; other counts every other object by other_key(); bad counts unparsable lines.
    Rollout records are recognised by their prefix first, so 10k lines/s stay cheap to read.
    """

    _PREFIX = b'{"type": "record", "kind": "rollout"'

    def __init__(self, proc: subprocess.Popen) -> None:
        self.arrivals: dict[int, list[float]] = {}
        self.last_n = -1
        self.other: dict[str, int] = {}
        self.bad = 0
        self.thread = threading.Thread(target=self._run, args=(proc.stdout,), daemon=True)
        self.thread.start()

    def _arrive(self, n: int, t: float) -> None:
        self.arrivals.setdefault(n, []).append(t)
        if n > self.last_n:
            self.last_n = n

    def _run(self, stdout) -> None:
        for raw in stdout:
            t = time.perf_counter()
            if raw.startswith(self._PREFIX):
                self._arrive(json.loads(raw)["n"], t)
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                self.bad += 1
                continue
            if obj.get("type") == "record" and obj.get("kind") == "rollout":
                self._arrive(obj["n"], t)
            else:
                key = other_key(obj)
                self.other[key] = self.other.get(key, 0) + 1


# ----------------------------------------------------------------------------- /proc sampling
def cpu_ticks(pid: int) -> int:
    """utime+stime of all pid's threads, in clock ticks (divide by HZ for seconds)."""
    with open(f"/proc/{pid}/stat") as fh:
        data = fh.read()
    # after "pid (comm) ", fields[0] is field 3 (state); utime is field 14, stime field 15
    f = data[data.rfind(")") + 2 :].split()
    return int(f[11]) + int(f[12])


def rss_kb(pid: int) -> int:
    """Resident set size (VmRSS) in KiB, to watch tail's memory grow under load."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def ctx_switches(pid: int) -> tuple[int, int]:
    """(sum of voluntary+involuntary context switches over all threads, thread count).

    Roughly how often a process wakes up; an idle follower should hardly ever.
    """
    total = 0
    threads = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as fh:
                for line in fh:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
            threads += 1
        except FileNotFoundError:
            pass
    return total, threads
