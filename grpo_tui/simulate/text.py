"""The simulated log's text: metric dicts as Miles prints them, headers (Miles, slime, SGLang, the
Ray prefix and dedup marks), tqdm bars and the noise lines between metric lines."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np

from .series import _rng
from .setups import _SLIME_SITES, CYAN, DEDUP_NOTE, FORMATS, GPUS, GREEN, PROMPT_LEN, RESET

# ---------------------------------------------------------------- metric dicts


def _rm_perf(v: dict, i: int) -> dict:
    """RolloutManager `perf N:` dict: sample statistics and generation throughput."""
    z, su = v["z"][i], v["su"]
    groups, batch, cap = su.groups, su.groups * su.per_group, su.cap
    mean, rt, trunc = float(v["length"][i]), float(v["rollout_time"][i]), float(v["trunc"][i])
    top = int(v["max"][i]) if "max" in v else (cap if trunc > 0 else int(min(cap - 1, mean * 1.7)))
    d: dict = {
        "rollout/response_len/mean": mean,
        "rollout/response_len/median": float(v["median"][i]),
        "rollout/response_len/max": top,
        "rollout/response_len/min": int(v["min"][i]),
    }
    c0, c1 = int(v["c0"][i]), int(v["c1"][i])
    if c0:
        d["rollout/zero_std/count_0"] = c0
    if c1:
        d["rollout/zero_std/count_1"] = c1
    hit = 0.87 + 0.01 * float(z[11])
    d.update(
        {
            "rollout/zero_std/all_zero_percentage": c0 / groups,
            "rollout/zero_std/all_one_percentage": c1 / groups,
            "rollout/prefix_cache_hit_rate": hit,
            "rollout/avg_cached_tokens_per_sample": hit * su.prompt_len,
            "rollout/repetition_frac": 0.0,
            "rollout/truncated_ratio": trunc,
            "rollout/weight_version/mean": float(i + 1),
            "rollout/weight_version/median": float(i + 1),
            "rollout/weight_version/max": i + 1,
            "rollout/weight_version/min": i + 1,
            "rollout/weight_version/mixed_version_ratio": 0.0,
            "perf/rollout_time": rt,
            "perf/tokens_per_gpu_per_sec": mean * batch / rt / GPUS,
            "perf/longest_sample_tokens_per_sec": top / rt,
            "perf/effective_tokens_per_gpu_per_sec": mean * batch / rt / GPUS,
            "perf/longest_effective_sample_tokens_per_sec": top / rt,
        }
    )
    return d


def _train_rollout(v: dict, i: int) -> dict:
    """Trainer `rollout N:` dict; ref equals log_probs at rollout 0 like a real first step."""
    logp = float(v["logp"][i])
    z = v["z"][i]
    adv = float(v["adv"][i])
    return {
        "rollout/response_lengths": float(v["length"][i]),
        "rollout/rewards": int(round(3 * float(z[11]))) * 2.0**-29,
        "rollout/truncated": float(v["trunc"][i]),
        "rollout/rollout_log_probs": logp - 0.0011 * abs(float(z[8])),
        "rollout/raw_reward": float(v["reward"][i]),
        "rollout/total_lengths": float(v["length"][i]) + float(v["prompt"][i]),
        "rollout/ref_log_probs": logp if i == 0 else logp - 0.0004 * i * (1 + 0.1 * float(z[9])),
        "rollout/log_probs": logp,
        "rollout/advantages": adv,
        "rollout/returns": adv,
    }


def _step_dict(st: dict, s: int) -> dict:
    """Trainer `step S:` dict; loss == pg_loss because entropy and KL coefficients are 0."""
    return {
        "train/loss": st["loss"][s],
        "train/pg_loss": st["loss"][s],
        "train/entropy_loss": st["entropy"][s] if "entropy" in st else 0.0,
        "train/pg_clipfrac": st["clip"][s],
        "train/ppo_kl": st["ppo_kl"][s],
        "train/ess_ratio": st["ess"][s],
        "train/train_rollout_logprob_abs_diff": st["gap"][s],
        "train/train_rollout_kl": st["kl"][s],
        "train/grad_norm": st["grad"][s],
        "train/lr-pg_0": 1e-06,
        "train/step": s,
    } | ({"train/kl_loss": st["kl_ref"][s]} if "kl_ref" in st else {})


def _train_perf(tm: dict, train_wait: float, tokens: float, params: float = 0.6e9) -> dict:
    """Trainer `perf N:` dict: timers since the last print plus derived TFLOPs and MFU."""
    fwd = 2 * params * tokens / GPUS / 1e12
    train = tm["prep"] + tm["ref"] + tm["logp"] + tm["actor"] + tm["extra"]
    step = train_wait + train
    return {
        "perf/sleep_time": tm["prev_sleep"],
        "perf/update_weights_time": tm["prev_update"],
        "perf/wake_up_time": tm["wake"],
        "perf/data_preprocess_time": tm["prep"],
        "perf/train_wait_time": train_wait,
        "perf/ref_log_probs_time": tm["ref"],
        "perf/log_probs_time": tm["logp"],
        "perf/actor_train_time": tm["actor"],
        "perf/train_time": train,
        "perf/log_probs_tflops": fwd / tm["logp"],
        "perf/ref_log_probs_tflops": fwd / tm["ref"],
        "perf/actor_train_tflops": 3 * fwd / tm["actor"],
        "perf/actor_train_tok_per_s": tokens / tm["actor"],
        "perf/mfu_peak_tflops": 989.0,
        "perf/actor_train_mfu": 3 * fwd / tm["actor"] / 989.0,
        "perf/step_time": step,
        "perf/wait_time_ratio": train_wait / step,
    }


def _timings(seed: int, i: int, length: float, prompt_len: float = PROMPT_LEN) -> dict:
    """Phase durations of one training round (~20-40 s), growing with the tokens trained on."""
    u = _rng(seed, 4, i).random(size=8).tolist()
    scale = (float(length) + prompt_len) / 860.0
    return {
        "wake": 2.0 + 1.5 * u[0],
        "prep": 0.6 + 0.5 * u[1],
        "ref": (2.5 + 1.5 * u[2]) * scale,
        "logp": (2.5 + 1.5 * u[3]) * scale,
        "actor": (10.0 + 5.0 * u[4]) * scale,
        "extra": 0.8 + 0.4 * u[7],
        "sleep": 1.5 + 1.5 * u[5],
        "update": 2.5 + 2.5 * u[6],
    }


# ---------------------------------------------------------------- line formatting


class _Log:
    """Formats headers, Ray prefixes and dedup suffixes for one format and one seed."""

    def __init__(self, fmt: str, start: datetime, seed: int):
        if fmt not in FORMATS:
            raise ValueError(f"unknown fmt {fmt!r}; choose from {', '.join(FORMATS)}")
        self.fmt = fmt
        start = start.replace(microsecond=0)  # whole seconds keep printed and yielded times equal
        self.start = start.replace(tzinfo=None)
        aware = start if start.tzinfo else start.replace(tzinfo=UTC)
        self.t0 = aware.timestamp()
        base = 40000 + (seed * 7919) % 20000
        self.pids = {"rm": base, "eng": base + 180, "rank": base + 560}
        self.noted = False

    def when(self, t: float) -> datetime:
        return self.start + timedelta(seconds=round(t, 3))

    def _proc(self, who: str) -> tuple[str, str]:
        """(Ray prefix, process name) for a role: main, rm, rank<r>, eng<i>."""
        if who == "main":
            return "", "main"
        if who == "rm":
            return f"{CYAN}(RolloutManager pid={self.pids['rm']}){RESET} ", "rollout_manager"
        if who.startswith("rank"):
            r = int(who[4:])
            return f"{CYAN}(MegatronTrainRayActor pid={self.pids['rank'] + r}){RESET} ", f"actor_cell0_rank{r}"
        return f"{CYAN}(SGLangEngine pid={self.pids['eng'] + int(who[3:])}){RESET} ", ""

    def log(self, t: float, who: str, site: tuple[str, int], msg: str, level: str = "INFO") -> tuple[float, str]:
        """A Python-logging line in the chosen header format."""
        pre, name = self._proc(who)
        w = self.when(t)
        if self.fmt == "slime":
            site = _SLIME_SITES.get(site, site)
        if self.fmt == "miles":
            head = f"[{w:%Y-%m-%d %H:%M:%S}.{w.microsecond // 1000:03d} {name}] "
            tp = self.t0 + round(t, 3)
        else:
            head = f"[{w:%Y-%m-%d %H:%M:%S}] " + (f"{level} " if self.fmt == "level" else "")
            tp = self.t0 + math.floor(round(t, 3))
        return tp, f"{pre}{head}{site[0]}:{site[1]} - {msg}"

    def sglang(self, t: float, eng: int, msg: str) -> tuple[float, str]:
        """An SGLang server line: second resolution, no level, no file."""
        pre, _ = self._proc(f"eng{eng}")
        return self.t0 + math.floor(round(t, 3)), f"{pre}[{self.when(t):%Y-%m-%d %H:%M:%S}] {msg}"

    def bare(self, t: float, who: str, text: str) -> tuple[float, str]:
        """A header-less line (traceback, tqdm, print, continuation) under the Ray prefix."""
        return self.t0 + round(t, 3), self._proc(who)[0] + text

    def dedup(self, item: tuple[float, str], n: int = 7) -> tuple[float, str]:
        """Append Ray's green `[repeated Nx across cluster]`; the first one carries the note."""
        note = "" if self.noted else DEDUP_NOTE
        self.noted = True
        return item[0], f"{item[1]}{GREEN} [repeated {n}x across cluster]{note}{RESET}"


def _bar(desc: str, n: int, total: int, elapsed: float) -> str:
    """One tqdm render: `desc:  49%|████▊     | 18/37 [00:04<00:04,  3.90it/s]`."""
    frac = n / total
    cells = frac * 10
    full = int(cells)
    part = int((cells - full) * 8)
    bar = "█" * full + ("" if full == 10 else (" ▏▎▍▌▋▊▉"[part] + " " * (9 - full)))
    mmss = lambda s: f"{int(s) // 60:02d}:{int(s) % 60:02d}"
    if n == 0:
        return f"{desc}:   0%|{bar}| 0/{total} [00:00<?, ?it/s]"
    rate = n / elapsed
    left = (total - n) / rate
    return f"{desc}: {frac * 100:3.0f}%|{bar}| {n}/{total} [{mmss(elapsed)}<{mmss(left)}, {rate:5.2f}it/s]"


def _tqdm(desc: str, total: int, seconds: float) -> str:
    """A closed tqdm bar as Ray ships it: all renders joined by `\\r` on one physical line."""
    marks = [0, total // 2, total]
    return "\r".join(_bar(desc, k, total, seconds * k / total) for k in marks)


# ---------------------------------------------------------------- event assembly


class _Chunk:
    """Events of one stretch of log; noise events carry a priority and may be dropped."""

    def __init__(self):
        self.events: list[tuple[float, int, int, tuple[float, str]]] = []

    def add(self, t: float, item: tuple[float, str], prio: int = 0) -> None:
        self.events.append((t, prio, len(self.events), item))

    def lines(self, budget: int | None) -> list[tuple[float, str]]:
        """Keep all required events and the `budget` most important noise events, in time order.

        Filler (priority 9) always keeps its share, so generation windows are never empty."""
        ev = self.events
        if budget is not None:
            fill = sum(1 for e in ev if e[1] == 9)
            noise = sorted((e for e in ev if 0 < e[1] < 9), key=lambda e: (e[1], e[2]))
            noise = noise[: max(budget - fill, 0)] + [e for e in ev if e[1] == 9]
            keep = {e[2] for e in noise[: max(budget, 0)]}
            ev = [e for e in ev if e[1] == 0 or e[2] in keep]
        return [e[3] for e in sorted(ev, key=lambda e: (e[0], e[2]))]


def _memory(L: _Log, t: float, who: str, what: str, free: float) -> tuple[float, str]:
    r = who[4:]
    stats = {
        "gpu": r,
        "total_GB": 79.19,
        "free_GB": round(free, 2),
        "used_GB": round(79.19 - free, 2),
        "allocated_GB": 2.41,
        "reserved_GB": 3.1,
    }
    return L.log(t, who, ("memory_utils.py", 41), f"[Rank {r}] Memory-Usage {what}: {stats}")


def _timer(L: _Log, t: float, name: str, elapsed: float | None = None) -> tuple[float, str]:
    if elapsed is None:
        return L.log(t, "rank0", ("timer.py", 31), f"Timer {name} start")
    return L.log(t, "rank0", ("timer.py", 42), f"Timer {name} end (elapsed: {elapsed:.1f}s)")


def _filler(L: _Log, ch: _Chunk, rng: np.random.Generator, lo: float, hi: float, count: int) -> None:
    """SGLang decode/prefill batches and health checks spread over a generation window."""
    for t in np.sort(rng.uniform(lo, hi, count)):
        eng, kind = int(rng.integers(GPUS)), rng.random()
        frac = (t - lo) / max(hi - lo, 1e-9)
        if kind < 0.15 and frac < 0.3:
            msg = (
                f"Prefill batch, #new-seq: {int(rng.integers(1, 33))}, #new-token: {int(rng.integers(300, 4800))}, "
                f"#cached-token: {int(rng.integers(0, 4000))}, token usage: {0.01 * rng.random():.2f}, "
                f"#running-req: {int(rng.integers(0, 32))}, #queue-req: 0, "
                f"input throughput (token/s): {2000 + 9000 * rng.random():.2f}, cuda graph: False"
            )
        elif kind < 0.3:
            msg = f'INFO:     10.0.0.5:{int(rng.integers(40000, 60000))} - "GET /health HTTP/1.1" 200 OK'
        else:
            run = max(1, int(32 * (1 - frac) ** 1.5))
            msg = (
                f"Decode batch, #running-req: {run}, #token: {run * int(rng.integers(300, 900))}, "
                f"token usage: {0.02 + 0.1 * (1 - frac):.2f}, cuda graph: True, "
                f"gen throughput (token/s): {run * 95 + 300 * rng.random():.2f}, #queue-req: 0"
            )
        ch.add(float(t), L.sglang(float(t), eng, msg), 9)
