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

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

SCENARIOS: dict[str, str] = {
    "healthy": "reward rises 0.63->0.80, length falls 720->460, gap/KL flat, clipfrac 0",
    "gap-rising": "log-prob gap and KL to engine grow every rollout (x1.12 / x1.25)",
    "gap-jump": "log-prob gap jumps x3 (KL x9) at onset and stays high",
    "grad-norm-rising": "gradient norm grows x1.25 per rollout (learning rate too high)",
    "length-hacking": "length grows 3%/rollout while reward falls 0.01/rollout",
    "off-policy": "clip fraction and ppo_kl above 0 with one update per rollout",
    "rollout-slowdown": "rollout time grows x1.15 per rollout while length stays flat",
    "no-signal": "reward flat at 0.5 and 26+ of 32 groups score all the same",
    "non-finite": "nan/inf grad_norm or loss from onset",
    "crashed": "CUDA OOM traceback at onset (phase=fail), then the log ends",
    "engine-down": "503 retry storm for ~4 minutes, no metric lines after onset",
    "no-steps": "startup lines and noise for 16+ minutes, never a metric line",
    "stalled": "healthy until onset, then only engine health checks for 15 minutes (trainer hung)",
}
FORMATS = ("miles", "slime", "level")

GROUPS, PER_GROUP, CAP, GPUS = 32, 8, 1024, 8
BATCH = GROUPS * PER_GROUP
PROMPT_LEN = 145.0
DEFAULT_START = datetime(2026, 8, 21, 9, 50, 2)
ROUTER = "http://10.0.0.5:3817"
CYAN, GREEN, RESET = "\x1b[36m", "\x1b[32m", "\x1b[0m"
DEDUP_NOTE = (
    " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
    "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html"
    "#log-deduplication for more options.)"
)
# slime prints the same messages from other call sites (docs/log-format.md §1, §9).
_SLIME_SITES = {
    ("log_utils.py", 542): ("log_utils.py", 460),
    ("model.py", 854): ("model.py", 649),
    ("metrics.py", 89): ("rollout.py", 1193),
    ("log_utils.py", 123): ("log_utils.py", 259),
}
_ENDLESS = {"crashed", "engine-down", "stalled", "no-steps"}  # no clean end of run


@dataclass(frozen=True)
class Setup:
    """One training setup: model, data, batch shape, cap, and how its healthy curves move.

    `manual` is the manual's own setup (docs/contracts.md §4) and keeps the original generator byte
    for byte; every other setup draws its metrics from a small model of a GRPO rollout
    (per-group accuracy ~ Beta, answers ~ Binomial, lengths ~ log-normal under the cap), so
    reward noise, zero-std groups and the cut share hang together the way they do in real runs.
    Seeds of one setup differ in their levels (gap, KL, grad norm, speed) by tens of percent.
    """

    name: str
    what: str
    model: str = "Qwen3-0.6B"
    params: float = 0.6e9
    data: str = "gsm8k/train.parquet"
    groups: int = GROUPS
    per_group: int = PER_GROUP
    cap: int = CAP
    steps_per_rollout: int = 1
    rollouts: int = 48
    layers: tuple[int, int, int, int, int] = (28, 1024, 3072, 16, 8)  # layers, hidden, ffn, heads, kv groups
    # healthy curves: value at rollout 0 -> value at `horizon`, then flat
    reward: tuple[float, float] = (0.625, 0.80)
    length: tuple[float, float] = (720.0, 455.0)
    horizon: float = 47.0
    shape: float = 1.2
    concentration: float = 2.0  # Beta(r c, (1 - r) c) per-prompt accuracy: lower = more zero-std groups
    gap: float = 0.01525
    kl: float = 0.00069
    grad: float = 1.2
    grad_sigma: float = 0.25  # log-scale noise of the gradient norm
    grad_drift: float = 1.0  # healthy multiplicative drift of grad norm over the horizon
    rt_base: float = 20.0  # rollout time = base + per_token x longest answer
    rt_per_token: float = 0.08
    heavy: bool = False  # Student-t noise and isolated spikes
    spike_p: float = 0.0  # chance per step/rollout of an isolated spike
    gap_bump: float = 0.0  # healthy gap step-up (fraction) at a random rollout, then a plateau
    heat: float = 1.0  # healthy rollout-time ramp (factor over 16 rollouts), then a plateau
    entropy: float | None = None  # logged policy entropy at rollout 0 (None: not observed, logged as 0.0)
    prompt_len: float = PROMPT_LEN


SETUPS: dict[str, Setup] = {
    s.name: s
    for s in (
        Setup("manual", "the manual's setup: Qwen3-0.6B on GSM8K, 32x8, 1,024-token cap (the default ranges)"),
        Setup(
            "math-7b",
            "7B on MATH: low, slow reward (0.32->0.52), 64x8, 4,096 cap, K=2, small grad norm",
            model="Qwen2.5-7B",
            params=7.6e9,
            data="math/train.parquet",
            groups=64,
            per_group=8,
            cap=4096,
            steps_per_rollout=2,
            rollouts=80,
            layers=(28, 3584, 18944, 28, 4),
            reward=(0.32, 0.52),
            length=(680.0, 610.0),
            horizon=120.0,
            shape=0.8,
            concentration=1.5,
            gap=0.0082,
            kl=0.00034,
            grad=0.17,
            grad_sigma=0.22,
            rt_base=30.0,
            rt_per_token=0.09,
            gap_bump=0.10,
            heat=1.3,
            entropy=0.36,
        ),
        Setup(
            "reasoning-4b",
            "4B on DAPO-style data: long reasoning, length grows 400->1,400 with reward 0.30->0.60",
            model="Qwen3-4B",
            params=4.0e9,
            data="dapo-math-17k/train.parquet",
            groups=32,
            per_group=16,
            cap=8192,
            rollouts=100,
            layers=(36, 2560, 9728, 32, 8),
            reward=(0.30, 0.60),
            length=(400.0, 1400.0),
            horizon=100.0,
            shape=1.0,
            concentration=1.6,
            gap=0.0121,
            kl=0.00052,
            grad=0.30,
            grad_sigma=0.22,
            grad_drift=1.4,
            rt_base=25.0,
            rt_per_token=0.05,
            heat=1.3,
            entropy=0.55,
        ),
        Setup(
            "k4",
            "1.7B on GSM8K with K=4 optimizer steps per rollout (64x8, global batch 128), 2,048 cap",
            model="Qwen3-1.7B",
            params=1.7e9,
            groups=64,
            per_group=8,
            cap=2048,
            steps_per_rollout=4,
            rollouts=60,
            layers=(28, 2048, 6144, 16, 8),
            reward=(0.55, 0.80),
            length=(520.0, 380.0),
            horizon=50.0,
            gap=0.0183,
            kl=0.00081,
            grad=0.62,
            grad_sigma=0.25,
            rt_base=18.0,
            rt_per_token=0.06,
            gap_bump=0.10,
        ),
        Setup(
            "puzzles-3b",
            "3B on logic puzzles: heavy-tailed noise with isolated spikes, reward 0.18->0.45",
            model="Qwen2.5-3B",
            params=3.1e9,
            data="knights-knaves/train.parquet",
            groups=32,
            per_group=8,
            cap=4096,
            rollouts=150,
            layers=(36, 2048, 11008, 16, 2),
            reward=(0.18, 0.45),
            length=(900.0, 700.0),
            horizon=150.0,
            shape=1.3,
            concentration=1.5,
            gap=0.0247,
            kl=0.0011,
            grad=0.45,
            grad_sigma=0.30,
            rt_base=25.0,
            rt_per_token=0.07,
            heavy=True,
            spike_p=0.03,
            heat=1.3,
            entropy=0.48,
        ),
        Setup(
            "plateau",
            "1B on GSM8K: reward saturates at 0.78 after 10 rollouts, length flat, 2,048 cap",
            model="Llama-3.2-1B-Instruct",
            params=1.2e9,
            groups=32,
            per_group=8,
            cap=2048,
            rollouts=120,
            layers=(16, 2048, 8192, 32, 8),
            reward=(0.68, 0.78),
            length=(520.0, 505.0),
            horizon=10.0,
            shape=0.7,
            gap=0.0105,
            kl=0.00047,
            grad=0.85,
            grad_sigma=0.25,
            rt_base=15.0,
            rt_per_token=0.05,
            gap_bump=0.10,
        ),
        Setup(
            "long",
            "0.6B on GSM8K for 240 rollouts, 1,536 cap: slow healthy drifts (gap +10 %, heat x1.3)",
            rollouts=240,
            cap=1536,
            reward=(0.55, 0.85),
            length=(640.0, 420.0),
            horizon=150.0,
            shape=1.0,
            gap=0.0141,
            kl=0.00066,
            grad=1.0,
            grad_sigma=0.28,
            grad_drift=1.3,
            rt_base=12.0,
            rt_per_token=0.06,
            gap_bump=0.10,
            heat=1.3,
        ),
    )
}


# ---------------------------------------------------------------- public API


def onset_of(scenario: str, rollouts: int, onset: int | None = None) -> int | None:
    """Rollout id where the break starts, so tests and demos know where alerts belong."""
    _check_scenario(scenario)
    if scenario == "healthy":
        return None
    if scenario == "no-steps":
        return 0
    return max(0, int(onset)) if onset is not None else rollouts // 3


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


# ---------------------------------------------------------------- metric values


def _check_scenario(scenario: str) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")


def setup_of(name: str) -> Setup:
    """The named setup, or ValueError listing the known ones."""
    if name not in SETUPS:
        raise ValueError(f"unknown setup {name!r}; choose from {', '.join(SETUPS)}")
    return SETUPS[name]


def _rng(seed: int, *key: int) -> np.random.Generator:
    """One independent stream per (seed, purpose, index): values never depend on other draws."""
    return np.random.default_rng([seed, *key])


def _ar1(innov: np.ndarray, phi: float) -> np.ndarray:
    """Unit-variance AR(1): consecutive rollouts are correlated like real training curves."""
    out = np.empty(len(innov))
    prev, scale = 0.0, math.sqrt(1 - phi * phi)
    for i, e in enumerate(innov):
        prev = e if i == 0 else phi * prev + scale * e
        out[i] = prev
    return out


def _reward_curve(r: np.ndarray) -> np.ndarray:
    return 0.625 + 0.175 * np.minimum(r / 47.0, 1.0) ** 1.2


def _length_curve(r: np.ndarray) -> np.ndarray:
    return 455.0 + 265.0 * (1.0 - np.minimum(r / 47.0, 1.0)) ** 1.2


def _trunc_of(length: np.ndarray) -> np.ndarray:
    """Cut share grows with mean length (the 1024 cap bites the long tail)."""
    return 0.025 + 0.31 * (np.maximum(length - 440.0, 0.0) / 280.0) ** 1.3


def _since(r: np.ndarray, onset: int | None) -> np.ndarray:
    """Rollouts since the break, 1 at onset, 0 before (or when there is no break)."""
    if onset is None:
        return np.zeros(len(r))
    return np.where(r >= onset, r - onset + 1, 0).astype(float)


SLOWDOWN_MAX = 1000.0  # the slowdown stops growing here (~a day a rollout: the run is dead)


def _slowdown(d: np.ndarray, pace: float) -> np.ndarray:
    """x1.15 a rollout since the break, up to SLOWDOWN_MAX: unbounded, a long simulated run's
    clock left the calendar (4,000 rollouts: 1.15 ** 2,700) and simulate crashed."""
    with np.errstate(over="ignore"):
        return np.minimum(1.15 ** (pace * d), SLOWDOWN_MAX)


def _rollout_series(scenario: str, n: int, seed: int, onset: int | None, pace: float = 1.0) -> dict[str, np.ndarray]:
    """Per-rollout sample statistics: the healthy curves plus the scenario's break."""
    r = np.arange(n, dtype=float)
    z = np.array([_rng(seed, 1, i).normal(size=12) for i in range(n)]).reshape(n, 12)
    d = _since(r, onset)
    hit = d > 0
    early = r < 10
    rc, lc = _reward_curve(r), _length_curve(r)
    rn = _ar1(z[:, 0], 0.3)
    k = min(n, 10)
    if k:
        m = rn[:k].mean()
        rn[:k] -= m - np.clip(m, -0.25, 0.25)  # keep the per-seed early mean near 0.63
    reward = rc + 0.045 * np.sqrt(rc * (1 - rc) / (0.63 * 0.37)) * rn
    reward = _limit_swings(np.clip(reward, 0.535, np.where(early, 0.735, 0.865)), 0.19)
    length = np.clip(lc + 18.0 * _ar1(z[:, 1], 0.5), np.where(early, 632, 402), 781)
    keep = ~hit
    if scenario == "length-hacking":
        o = int(onset)  # type: ignore[arg-type]  # (a broken scenario has its onset)
        reward = np.where(
            hit, np.clip(_reward_curve(np.array([o]))[0] - 0.01 * pace * d + 0.03 * rn, 0.02, 0.98), reward
        )
        length = np.where(
            hit, np.minimum(_length_curve(np.array([o]))[0] * 1.03 ** (pace * d) + 18 * z[:, 1], 990), length
        )
    elif scenario == "rollout-slowdown":
        length = np.where(hit, _length_curve(np.array([float(onset)]))[0] + 12 * z[:, 1], length)  # type: ignore[arg-type]
    elif scenario == "no-signal":
        reward = np.where(hit, 0.5 + 0.004 * z[:, 0], reward)
    else:
        keep = np.ones(n, bool)
    trunc = _trunc_of(length) + 0.012 * z[:, 2]
    trunc = np.where(keep, np.clip(trunc, np.where(early, 0.195, 0.022), 0.425), np.clip(trunc, 0.004, 1.0))
    c0, c1 = _zero_std(reward, z, scenario, hit)
    rt = (10 + 0.04 * CAP + 0.07 * length) * np.exp(0.04 * z[:, 5])
    if scenario == "rollout-slowdown":
        rt = rt * _slowdown(d, pace)
    return {
        "reward": np.round(reward * BATCH) / BATCH,
        "length": np.round(length * BATCH) / BATCH,
        "trunc": np.round(trunc * BATCH) / BATCH,
        "c0": c0,
        "c1": c1,
        "rollout_time": rt,
        "median": np.round(2 * length * (0.945 + 0.012 * z[:, 6])) / 2,
        "min": np.clip(np.round(95 + 30 * z[:, 7]), 31, 220).astype(int),
        "logp": -(0.31 - 0.08 * np.minimum(r / 47, 1)) + 0.006 * z[:, 8],
        "adv": 0.0015 * z[:, 9],
        "prompt": PROMPT_LEN + 2.5 * z[:, 10],
        "z": z,
    }


def _limit_swings(x: np.ndarray, most: float) -> np.ndarray:
    """Healthy reward never moves more than `most` between rollouts (docs/contracts.md §4: <= 0.21)."""
    out = x.copy()
    for i in range(1, len(out)):
        out[i] = min(max(out[i], out[i - 1] - most), out[i - 1] + most)
    return out


def _soft_cap(x: np.ndarray, knee: float, top: float) -> np.ndarray:
    """Squash values above `knee` smoothly below `top`, so rare spikes stay inside the range."""
    width = top - knee
    return np.where(x > knee, knee + width * np.tanh((x - knee) / width), x)


def _zero_std(reward, z, scenario, hit):
    """All-wrong groups shrink and all-right groups grow as reward rises; 7 and 3 at rollout 0."""
    c0 = np.clip(np.round(7 * ((1 - reward) / 0.37) ** 1.6 + 0.8 * z[:, 3]), 0, GROUPS)
    c1 = np.clip(np.round(3 * (reward / 0.63) ** 5 + 0.8 * z[:, 4]), 0, GROUPS)
    if len(c0) and not hit[0]:
        c0[0], c1[0] = 7, 3
    if scenario == "no-signal":
        c0 = np.where(hit, 13 + (z[:, 3] > 0) + (z[:, 3] > 1), c0)
        c1 = np.where(hit, 13 + (z[:, 4] > 0), c1)
    c1 = np.minimum(c1, GROUPS - c0)
    return c0.astype(int), c1.astype(int)


def _step_series(scenario: str, n: int, K: int, seed: int, onset: int | None, pace: float = 1.0) -> dict[str, list]:
    """Per optimizer step train metrics (K steps per rollout)."""
    m = n * K
    s = np.arange(m)
    r = (s // K).astype(float)
    j = s % K
    z = np.array([_rng(seed, 2, i).normal(size=6) for i in range(m)]).reshape(m, 6)
    u = np.array([_rng(seed, 3, i).random(size=6) for i in range(m)]).reshape(m, 6)
    d = _since(r, onset)
    hit = d > 0
    early = r < 10
    gap = np.clip(0.01525 + 0.0005 * _ar1(z[:, 0], 0.6), np.where(early, 0.01415, 0.01365), 0.01635)
    kl = np.clip(0.00069 * gap / 0.01525 * (1 + 0.025 * z[:, 1]), 0.000635, 0.000745)
    grad = 1.2 * np.exp(0.42 * z[:, 2]) * np.where(u[:, 0] < 0.04, 2.0 + 1.5 * u[:, 1], 1.0)
    grad = np.maximum(_soft_cap(grad, 3.4, 4.9), 0.36)
    later = j > 0  # with K > 1 only the first step of a rollout is exactly on-policy
    clip = np.where(later, 0.0005 + 0.0035 * u[:, 2], 0.0)
    ppo_kl = np.where(later, 1e-5 + 3e-4 * u[:, 3], 0.0)
    ess = np.where(later, 0.9995 - 0.0045 * u[:, 4], 1.0)
    if scenario == "gap-rising":
        gap, kl = gap * 1.12 ** (pace * d), kl * 1.25 ** (pace * d)
    elif scenario == "gap-jump":
        gap, kl = np.where(hit, gap * 3, gap), np.where(hit, kl * 9, kl)
    elif scenario == "grad-norm-rising":
        grad = grad * 1.25 ** (pace * d)
    elif scenario == "off-policy":
        clip = np.where(hit, 0.002 + 0.018 * u[:, 2], clip)
        ppo_kl = np.where(hit, 1e-4 + 9e-4 * u[:, 3], ppo_kl)
        ess = np.where(hit, 0.995 - 0.035 * u[:, 4], ess)
    loss = 0.002 * z[:, 3]
    out = {
        "gap": gap.tolist(),
        "kl": kl.tolist(),
        "grad": grad.tolist(),
        "clip": clip.tolist(),
        "ppo_kl": ppo_kl.tolist(),
        "ess": ess.tolist(),
        "loss": loss.tolist(),
    }
    if scenario == "non-finite":
        _break_finite(out, u[:, 5], hit, onset, K)
    return out


def _break_finite(out: dict, u: np.ndarray, hit: np.ndarray, onset: int | None, K: int) -> None:
    """nan at the onset step, then nan/inf grad norms or nan losses on about 45% of steps."""
    assert onset is not None  # (a broken scenario has its onset)
    for i in np.flatnonzero(hit):
        if i == onset * K or u[i] < 0.25:
            out["grad"][i] = math.nan
        elif u[i] < 0.35:
            out["grad"][i] = math.inf
        elif u[i] < 0.45:
            out["loss"][i] = math.nan


# ---------------------------------------------------------------- other setups


def _t_noise(rng: np.random.Generator, size, heavy: bool) -> np.ndarray:
    """Unit-scale noise: normal, or Student-t with 3 degrees of freedom (heavy tails)."""
    if not heavy:
        return rng.normal(size=size)
    return rng.standard_t(3, size=size) / math.sqrt(3.0)


def _ramp(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.0, 1.0)


def _levels(su: Setup, seed: int) -> dict[str, float]:
    """Per-seed levels: two seeds of one setup differ by tens of percent in gap, KL, grad norm, speed."""
    z = _rng(seed, 8, 0).normal(size=12)
    u = _rng(seed, 8, 1).random(size=12)
    return {
        "r0": su.reward[0] + 0.03 * z[0],
        "r1": su.reward[1] + 0.03 * z[1],
        "l0": math.exp(0.08 * z[2]),
        "l1": math.exp(0.08 * z[3]),
        "gap": math.exp(0.2 * z[4]),
        "kl": math.exp(0.2 * z[5]),
        "grad": math.exp(0.2 * z[6]),
        "rt": math.exp(0.1 * z[7]),
        "ent": math.exp(0.1 * z[8]),
        # healthy slow features switch on for about half the seeds, at a random rollout
        "bump_at": u[0],
        "bump_on": u[1] < 0.6,
        "heat_at": u[2],
        "heat_on": u[3] < 0.6,
        "drift_on": u[4] < 0.7,
    }


def _curve(su: Setup, lv: dict, r: np.ndarray, which: str) -> np.ndarray:
    x = np.minimum(r / su.horizon, 1.0) ** su.shape
    if which == "reward":
        return lv["r0"] + (lv["r1"] - lv["r0"]) * x
    return su.length[0] * lv["l0"] + (su.length[1] * lv["l1"] - su.length[0] * lv["l0"]) * x


def _norm_sf(z: np.ndarray) -> np.ndarray:
    return 0.5 * np.vectorize(math.erfc)(np.asarray(z, float) / math.sqrt(2.0))


def _setup_rollout_series(
    su: Setup, scenario: str, n: int, seed: int, onset: int | None, pace: float = 1.0
) -> dict[str, np.ndarray]:
    """Per-rollout sample statistics of a non-manual setup: the healthy curves plus the break.

    Reward comes from G groups of n answers (accuracy per prompt ~ Beta, answers ~ Binomial),
    so its noise and the all-wrong / all-right group counts follow from one model; lengths are
    log-normal under the cap, which gives the cut share and the longest answer.
    """
    r = np.arange(n, dtype=float)
    z = np.array([_rng(seed, 1, i).normal(size=12) for i in range(n)]).reshape(n, 12)
    lv = _levels(su, seed)
    d = _since(r, onset)
    hit = d > 0
    heavy = su.heavy
    hz = np.array([_t_noise(_rng(seed, 9, i), 4, heavy) for i in range(n)]).reshape(n, 4)
    G, m = su.groups, su.per_group
    B = G * m
    true_r = np.clip(_curve(su, lv, r, "reward") + 0.02 * _ar1(z[:, 0], 0.9), 0.005, 0.995)
    length = _curve(su, lv, r, "length") * np.exp(0.035 * _ar1(hz[:, 0], 0.5))
    o = int(onset) if onset is not None else 0
    if scenario == "length-hacking":
        r_on = float(_curve(su, lv, np.array([float(o)]), "reward")[0])
        l_on = float(_curve(su, lv, np.array([float(o)]), "length")[0])
        true_r = np.where(hit, np.clip(np.maximum(r_on - 0.01 * pace * d, 0.45 * r_on), 0.01, 0.99), true_r)
        length = np.where(hit, np.minimum(l_on * 1.03 ** (pace * d) * np.exp(0.02 * hz[:, 0]), 0.93 * su.cap), length)
    elif scenario == "rollout-slowdown":
        l_on = float(_curve(su, lv, np.array([float(o)]), "length")[0])
        length = np.where(hit, l_on * np.exp(0.02 * hz[:, 0]), length)
    variant = seed % 3
    if scenario == "no-signal":
        true_r = np.where(hit, (0.03, 0.97, 0.0)[variant], true_r)
    length = np.minimum(length, 0.95 * su.cap)
    reward = np.empty(n)
    c0 = np.zeros(n, int)
    c1 = np.zeros(n, int)
    for i in range(n):
        g = _rng(seed, 11, i)
        p = float(true_r[i])
        if p <= 0.0:
            k = np.zeros(G, int)
        else:
            acc = g.beta(p * su.concentration, (1 - p) * su.concentration, size=G)
            k = g.binomial(m, acc)
        reward[i] = k.sum() / B
        c0[i] = int((k == 0).sum())
        c1[i] = int((k == m).sum())
    s_log = 0.55
    mu = np.log(length) - s_log**2 / 2
    p_cut = _norm_sf((math.log(su.cap) - mu) / s_log)
    trunc = np.array([_rng(seed, 12, i).binomial(B, min(max(float(p_cut[i]), 0.0), 1.0)) for i in range(n)]) / B
    top = np.exp(mu + s_log * 2.7)
    longest = np.where(trunc > 0, su.cap, np.minimum(su.cap - 1, np.round(top))).astype(int)
    rt = (su.rt_base + su.rt_per_token * longest) * lv["rt"] * np.exp((0.06 if heavy else 0.04) * hz[:, 1])
    if lv["heat_on"] and su.heat != 1.0:
        at = n * (0.2 + 0.5 * lv["heat_at"])
        rt = rt * (1 + (su.heat - 1) * _ramp((r - at) / 16.0))
    if su.spike_p:
        u = np.array([_rng(seed, 13, i).random(size=2) for i in range(n)]).reshape(n, 2)
        rt = rt * np.where(u[:, 0] < su.spike_p, 1.5 + 0.8 * u[:, 1], 1.0)
    if scenario == "rollout-slowdown":
        rt = rt * _slowdown(d, pace)
    return {
        "reward": reward,
        "length": np.round(length * B) / B,
        "trunc": trunc,
        "c0": c0,
        "c1": c1,
        "rollout_time": rt,
        "max": longest,
        "median": np.round(2 * length * (0.945 + 0.012 * z[:, 6])) / 2,
        "min": np.clip(np.round(0.15 * length + 30 * z[:, 7]), 8, None).astype(int),
        "logp": -(0.31 - 0.08 * np.minimum(r / su.horizon, 1)) + 0.006 * z[:, 8],
        "adv": 0.0015 * z[:, 9],
        "prompt": su.prompt_len + 2.5 * z[:, 10],
        "z": z,
    }


def _setup_step_series(
    su: Setup, scenario: str, n: int, K: int, seed: int, onset: int | None, pace: float = 1.0
) -> dict[str, list]:
    """Per optimizer step train metrics of a non-manual setup (K steps per rollout)."""
    m = n * K
    s = np.arange(m)
    r = (s // K).astype(float)
    j = s % K
    z = np.array([_rng(seed, 2, i).normal(size=6) for i in range(m)]).reshape(m, 6)
    u = np.array([_rng(seed, 3, i).random(size=6) for i in range(m)]).reshape(m, 6)
    hz = np.array([_t_noise(_rng(seed, 10, i), 3, su.heavy) for i in range(m)]).reshape(m, 3)
    sp = np.array([_rng(seed, 14, i).random(size=3) for i in range(m)]).reshape(m, 3)
    lv = _levels(su, seed)
    d = _since(r, onset)
    hit = d > 0
    gap = su.gap * lv["gap"] * np.exp(0.035 * _ar1(hz[:, 0], 0.6))
    if lv["bump_on"] and su.gap_bump:
        at = n * (0.2 + 0.5 * lv["bump_at"])
        gap = gap * (1 + su.gap_bump * _ramp((r - at) / 5.0))
    kl = su.kl * lv["kl"] * (gap / (su.gap * lv["gap"])) ** 1.5 * np.exp(0.04 * hz[:, 1])
    grad = su.grad * lv["grad"] * np.exp(su.grad_sigma * _ar1(hz[:, 2], 0.4))
    if lv["drift_on"] and su.grad_drift != 1.0:
        grad = grad * su.grad_drift ** np.minimum(r / su.horizon, 1.0)
    if su.spike_p:
        spike = sp[:, 0] < su.spike_p
        grad = grad * np.where(spike, 2.0 + 3.0 * sp[:, 1], 1.0)
        gap = gap * np.where(sp[:, 2] < su.spike_p, 1.6 + 0.6 * sp[:, 1], 1.0)
    later = j > 0  # with K > 1 only the first step of a rollout is exactly on-policy
    clip = np.where(later, 0.0005 + 0.0035 * u[:, 2], 0.0)
    ppo_kl = np.where(later, 1e-5 + 3e-4 * u[:, 3], 0.0)
    ess = np.where(later, 0.9995 - 0.0045 * u[:, 4], 1.0)
    if scenario == "gap-rising":
        gap, kl = gap * 1.12 ** (pace * d), kl * 1.25 ** (pace * d)
    elif scenario == "gap-jump":
        gap, kl = np.where(hit, gap * 3, gap), np.where(hit, kl * 9, kl)
    elif scenario == "grad-norm-rising":
        grad = grad * 1.25 ** (pace * d)
    elif scenario == "off-policy":
        clip = np.where(hit, 0.002 + 0.018 * u[:, 2], clip)
        ppo_kl = np.where(hit, 1e-4 + 9e-4 * u[:, 3], ppo_kl)
        ess = np.where(hit, 0.995 - 0.035 * u[:, 4], ess)
    loss = 0.002 * z[:, 3]
    out = {
        "gap": gap.tolist(),
        "kl": kl.tolist(),
        "grad": grad.tolist(),
        "clip": clip.tolist(),
        "ppo_kl": ppo_kl.tolist(),
        "ess": ess.tolist(),
        "loss": loss.tolist(),
    }
    if su.entropy is not None:
        e0 = su.entropy * lv["ent"]
        ent = e0 * (0.6 + 0.4 * np.exp(-r / max(su.horizon / 3, 1.0))) * np.exp(0.03 * z[:, 5])
        out["entropy"] = ent.tolist()
    if scenario == "non-finite":
        _break_finite(out, u[:, 5], hit, onset, K)
    return out


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
    }


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


class _Run:
    """Walks the timeline of one simulated run and yields it chunk by chunk."""

    def __init__(self, scenario, rollouts, seed, K, fmt, noise, onset, start, su: Setup | None = None, pace=1.0):
        _check_scenario(scenario)
        if K < 1 or rollouts < 0 or noise < 0:
            raise ValueError("steps_per_rollout >= 1, rollouts >= 0 and noise_per_rollout >= 0 required")
        if not pace > 0:
            raise ValueError("pace must be > 0")
        self.su = su = su or SETUPS["manual"]
        self.sc, self.n, self.seed, self.K, self.noise = scenario, rollouts, seed, K, noise
        self.onset = onset_of(scenario, rollouts, onset)
        self.L = _Log(fmt, start or DEFAULT_START, seed)
        if su.name == "manual":
            self.v = _rollout_series(scenario, rollouts, seed, self.onset, pace)
            self.st = _step_series(scenario, rollouts, K, seed, self.onset, pace)
        else:
            self.v = _setup_rollout_series(su, scenario, rollouts, seed, self.onset, pace)
            self.st = _setup_step_series(su, scenario, rollouts, K, seed, self.onset, pace)
        self.v["su"] = su  # type: ignore[assignment]  # (the series' dict also carries its setup)
        self.t = 0.0
        self.prev = {"sleep": 2.1, "update": 3.4}
        self.train_end = 140.0  # the trainer is ready after the initial weight sync

    # -- startup ---------------------------------------------------------------

    def exec_line(self) -> str:
        su = self.su
        batch = su.groups * su.per_group
        gbs = batch // self.K
        extra = f" --num-steps-per-rollout {self.K}" if batch % self.K else ""
        nl, hid, ffn, heads, kv = su.layers
        env = (
            '{"env_vars": {"PYTHONUNBUFFERED": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_NVLS_ENABLE": "1", '
            '"no_proxy": "127.0.0.1,127.0.0.1", "MASTER_ADDR": "127.0.0.1", '
            '"PYTHONPATH": "/root/Megatron-LM:/root/miles"}}'
        )
        return (
            "EXEC: export no_proxy=127.0.0.1 && export PYTHONUNBUFFERED=1 && ray job submit "
            f"--address=\"http://127.0.0.1:8265\" --runtime-env-json='{env}' -- python3 /root/miles/train.py "
            f"--swiglu --num-layers {nl} --hidden-size {hid} --ffn-hidden-size {ffn} --num-attention-heads {heads} "
            f"--group-query-attention --num-query-groups {kv} --kv-channels 128 --qk-layernorm "
            f"--hf-checkpoint /root/models/{su.model} --ref-load /root/models/{su.model}_torch_dist "
            f"--prompt-data /root/datasets/{su.data} --input-key messages --label-key label "
            "--apply-chat-template --rollout-shuffle --rm-type math "
            f"--num-rollout {self.n} --rollout-batch-size {su.groups} --n-samples-per-prompt {su.per_group} "
            f"--rollout-max-response-len {su.cap} --rollout-temperature 1.0 --global-batch-size {gbs}{extra} "
            "--advantage-estimator grpo --lr 1e-6 --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate "
            "--rollout-num-gpus-per-engine 1 --save-interval 20 --use-wandb --wandb-mode offline"
        )

    def startup(self) -> list[tuple[float, str]]:
        """EXEC, W&B and tensorboard lines always; the rest of start-up only with noise on."""
        L, ch = self.L, _Chunk()
        ch.add(0.0, (L.t0, self.exec_line()))
        ch.add(
            9.402, L.log(9.402, "main", ("wandb_utils.py", 38), "W&B offline mode enabled. Data will be saved locally.")
        )
        stamp = L.when(9.95).strftime("%Y%m%d_%H%M%S")
        ch.add(
            9.95,
            L.log(
                9.95, "main", ("tensorboard_utils.py", 44), f"Saving tensorboard log to tensorboard_log/miles/{stamp}."
            ),
        )
        self.t = 150.0
        if self.noise:
            self._startup_noise(ch)
        return ch.lines(None)

    def _startup_noise(self, ch: _Chunk) -> None:
        L = self.L
        w = L.when(2.114)
        ch.add(
            2.114,
            (
                L.t0 + 2.114,
                f"{w:%Y-%m-%d %H:%M:%S},114\tINFO worker.py:1942 -- Connected to Ray cluster. "
                "View the dashboard at http://127.0.0.1:8265 ",
            ),
            1,
        )
        su = self.su
        args = {
            "advantage_estimator": "grpo",
            "global_batch_size": su.groups * su.per_group // self.K,
            "lr": "1e-06",
            "n_samples_per_prompt": su.per_group,
            "num_rollout": self.n,
            "rollout_batch_size": su.groups,
            "rollout_max_response_len": su.cap,
            "save_interval": 20,
            "use_wandb": "True",
        }
        dump = ["------------------------ arguments ------------------------"]
        dump += [f"  {k} {'.' * (48 - len(k))} {val}" for k, val in args.items()]
        dump.append("-------------------- end of arguments ---------------------")
        for i, text in enumerate(dump):
            ch.add(10.5 + i * 1e-3, (L.t0 + 10.5 + i * 1e-3, text), 1)
        ch.add(
            12.0, L.log(12.0, "main", ("placement_group.py", 96), f"Creating placement group with {GPUS} GPUs..."), 1
        )
        for g in range(GPUS):
            t = 13.0 + g * 1e-3
            ch.add(
                t,
                L.log(
                    t,
                    "main",
                    ("placement_group.py", 131),
                    f"  bundle {g:4d}, actual_bundle_index: {g:4d}, node: 10.0.0.5, gpu: {g}",
                ),
                1,
            )
        ch.add(
            20.3,
            L.log(
                20.3,
                "rm",
                ("router_manager.py", 61),
                "Launch router with args: RouterArgs(host='10.0.0.5', port=3817, policy='cache_aware')",
            ),
            1,
        )
        ch.add(22.8, L.log(22.8, "rm", ("router_manager.py", 88), "Router launched at 10.0.0.5:3817"), 1)
        for e in range(GPUS):
            t = 95.0 + 2.3 * e
            ch.add(t, L.sglang(t, e, "The server is fired up and ready to roll!"), 1)
        ch.add(
            118.4,
            L.log(
                118.4,
                "rm",
                ("rollout.py", 54),
                "import miles.rollout.sglang_rollout.generate_rollout as generate_rollout function.",
            ),
            1,
        )
        ch.add(
            131.2,
            L.log(
                131.2,
                "rank0",
                ("tensorboard_utils.py", 44),
                f"Saving tensorboard log to tensorboard_log/miles/{L.when(131.2):%Y%m%d_%H%M%S}.",
            ),
            1,
        )
        self._update_lines(ch, 140.0, self.prev["update"], None, 1)

    # -- one rollout -----------------------------------------------------------

    def rollout(self, i: int) -> list[tuple[float, str]]:
        """Generation, the four metric kinds, the training timers and the weight update."""
        L, v, ch = self.L, self.v, _Chunk()
        nrng = _rng(self.seed, 5, i)
        t0, rt = self.t, float(v["rollout_time"][i])
        gen_end = t0 + rt
        self._generation(ch, nrng, t0, gen_end, i)
        t = gen_end + 0.25
        ch.add(t, L.log(t, "rm", ("metrics.py", 89), f"perf {i}: {_rm_perf(v, i)}"))
        tm = _timings(self.seed, i, float(v["length"][i]), self.su.prompt_len)
        tm["prev_sleep"], tm["prev_update"] = self.prev["sleep"], self.prev["update"]
        t = self._train(ch, i, t, tm)
        if not (self.sc == "crashed" and i == self.onset):
            self.prev = {"sleep": tm["sleep"], "update": tm["update"]}
            self.t = self._offload_and_update(ch, i, t, tm) + 0.3
        fill = max(self.noise // 3, self.noise - self._noise_count(ch))
        _filler(L, ch, nrng, t0 + 1, gen_end - 1, fill)
        return ch.lines(self.noise)

    @staticmethod
    def _noise_count(ch: _Chunk) -> int:
        return sum(1 for e in ch.events if 0 < e[1] < 9)

    def _generation(self, ch: _Chunk, rng, t0: float, gen_end: float, i: int) -> None:
        L = self.L
        t = t0 + 0.4 * (gen_end - t0)
        ch.add(
            t,
            L.sglang(
                t,
                int(rng.integers(GPUS)),
                f'INFO:     10.0.0.5:{int(rng.integers(40000, 60000))} - "GET /health HTTP/1.1" 200 OK',
            ),
            5,
        )
        t = gen_end - 0.02
        ch.add(t, L.bare(t, "rm", _tqdm("Rollout generation", self.su.groups * self.su.per_group, gen_end - t0)), 1)

    def _train(self, ch: _Chunk, i: int, t: float, tm: dict) -> float:
        """From `ft op=train phase=start` to the trainer `perf N:` line (or the crash)."""
        L, K = self.L, self.K
        t += 0.16
        ch.add(t, L.log(t, "main", ("group.py", 147), f"ft op=train phase=start rollout={i} attempt=0"), 1)
        t += 0.002
        ch.add(t, L.log(t, "main", ("cell.py", 229), "ft op=execute phase=start cell=0 fn=train n_actors=8"), 3)
        exec_start = t
        t += 0.4
        ch.add(t, _timer(L, t, "wake_up"), 6)
        t += tm["wake"]
        ch.add(t, _timer(L, t, "wake_up", tm["wake"]), 6)
        ch.add(t + 0.01, _memory(L, t + 0.01, "rank0", "after wake_up model", 70.3), 4)
        ch.add(t + 0.016, L.dedup(_memory(L, t + 0.016, "rank7", "after wake_up model", 70.41)), 2)
        t += 0.05
        train_wait = t - self.train_end
        ch.add(t, _timer(L, t, "train_wait", train_wait), 2)
        crash = self.sc == "crashed" and i == self.onset
        for name in ("data_preprocess", "ref_log_probs", "log_probs")[: 2 if crash else 3]:
            dur = tm[{"data_preprocess": "prep", "ref_log_probs": "ref", "log_probs": "logp"}[name]]
            ch.add(t + 0.01, _timer(L, t + 0.01, name), 7)
            t += dur
            ch.add(t, _timer(L, t, name, dur), 6)
        if self.sc == "crashed" and i == self.onset:
            self._crash(ch, i, t, exec_start)
            return t
        t += 0.3
        ch.add(t, L.log(t, "rank0", ("log_utils.py", 123), f"rollout {i}: {_train_rollout(self.v, i)}"))
        t += 0.02
        ch.add(t, _timer(L, t, "actor_train"), 4)
        a0 = t
        for j in range(K):
            s = i * K + j
            ts = a0 + tm["actor"] * (j + 1) / K - 0.03
            valid = "true" if math.isfinite(self.st["grad"][s]) and math.isfinite(self.st["loss"][s]) else "false"
            ch.add(
                ts,
                L.log(
                    ts,
                    "rank0",
                    ("model.py", 635),
                    f"ft op=train_step rollout={i} step={j} attempt=0 outcome=NORMAL valid_step={valid}",
                ),
                5,
            )
            d = _step_dict(self.st, s)
            ch.add(ts + 0.01, L.log(ts + 0.01, "rank0", ("log_utils.py", 542), f"step {s}: {d}"))
            ch.add(ts + 0.01, L.log(ts + 0.01, "rank0", ("model.py", 854), f"step {s}: {d}"))
        t = a0 + tm["actor"]
        ch.add(t, _timer(L, t, "actor_train", tm["actor"]), 3)
        self.train_end = t
        t += 0.27
        tokens = self.su.groups * self.su.per_group * (float(self.v["length"][i]) + float(self.v["prompt"][i]))
        perf = _train_perf(tm, train_wait, tokens, self.su.params)
        ch.add(t, L.log(t, "rank0", ("train_metric_utils.py", 56), f"perf {i}: {perf}"))
        t += 0.1
        ch.add(
            t,
            L.log(
                t,
                "main",
                ("cell.py", 247),
                f"ft op=execute phase=end cell=0 fn=train ok=true elapsed_s={t - exec_start:.1f}",
            ),
            4,
        )
        return t

    def _offload_and_update(self, ch: _Chunk, i: int, t: float, tm: dict) -> float:
        L = self.L
        t += 0.2
        ch.add(t, _memory(L, t, "rank0", "before offload model", 9.8), 7)
        t += tm["sleep"]
        if (i + 1) % 20 == 0 and self.noise:
            t = self._checkpoint(ch, i, t)
        return self._update_lines(ch, t, tm["update"], i, 0)

    def _update_lines(self, ch: _Chunk, t: float, dur: float, i: int | None, bump: int) -> float:
        """The weight sync after training (or the initial sync at start-up, rollout=)."""
        L = self.L
        p = lambda k: k + bump
        ch.add(
            t,
            L.log(t, "main", ("group.py", 257), f"ft op=update_weights phase=start rollout={'' if i is None else i}"),
            p(1),
        )
        t += 0.2
        ch.add(
            t,
            L.log(t, "rank0", ("structured_log.py", 23), "ft cls=MegatronTrainRayActor fn=update_weights phase=start"),
            p(1),
        )
        ch.add(t + 0.001, _timer(L, t + 0.001, "update_weights"), p(5))
        ch.add(t + 0.18, _memory(L, t + 0.18, "rank0", "before update_weights", 69.9), p(4))
        ch.add(t + 0.186, L.dedup(_memory(L, t + 0.186, "rank7", "before update_weights", 70.02)), p(2))
        for k, path in enumerate(("/pause_generation", "/flush_cache", "/update_weights_from_tensor")):
            tt = t + 0.3 + 0.1 * k
            ch.add(
                tt,
                L.sglang(tt, k, f'INFO:     10.0.0.5:{51234 + k} - "POST {path} HTTP/1.1" 200 OK'),
                p(7 if k < 2 else 6),
            )
        t += dur
        ch.add(t - 0.2, L.bare(t - 0.2, "rank0", _tqdm("Update weights", 29, dur - 0.5)), p(3))
        ch.add(t, _timer(L, t, "update_weights", dur), p(3))
        ch.add(
            t + 0.001,
            L.log(
                t + 0.001,
                "rank0",
                ("structured_log.py", 27),
                f"ft cls=MegatronTrainRayActor fn=update_weights phase=end ok=true elapsed_s={dur:.1f}",
            ),
            p(1),
        )
        ch.add(
            t + 0.05,
            L.sglang(t + 0.05, 0, 'INFO:     10.0.0.5:51240 - "POST /continue_generation HTTP/1.1" 200 OK'),
            p(6),
        )
        return t + 0.1

    def _checkpoint(self, ch: _Chunk, i: int, t: float) -> float:
        """Megatron save every 20 rollouts: Timer lines plus bare rank-0 prints."""
        L = self.L
        ch.add(t, _timer(L, t, "save_model"), 8)
        where = f"/root/shared_data/checkpoints/{self.su.model.lower()}-grpo"
        ch.add(
            t + 0.5,
            L.bare(t + 0.5, "rank0", f"saving checkpoint at iteration {i:7d} to {where} in torch_dist format"),
            8,
        )
        t += 6.0
        ch.add(
            t - 0.1,
            L.bare(
                t - 0.1, "rank0", f"  successfully saved checkpoint from iteration {i:7d} to {where} [ t 1/1, p 1/1 ]"
            ),
            8,
        )
        ch.add(t, _timer(L, t, "save_model", 6.0), 8)
        return t + 0.1

    # -- endings ---------------------------------------------------------------

    def _crash(self, ch: _Chunk, i: int, t: float, exec_start: float) -> None:
        """OOM in train_actor: the actor's ok=false traceback, then the driver's phase=fail one."""
        L, pid = self.L, self.L.pids["rank"]
        oom = (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity "
            f"of 79.19 GiB of which 1.05 GiB is free. Process {pid} has 78.12 GiB memory in use. Of the allocated "
            "memory 71.80 GiB is allocated by PyTorch, and 4.90 GiB is reserved by PyTorch but unallocated."
        )
        t += 9.7
        ch.add(
            t,
            L.log(
                t,
                "rank0",
                ("structured_log.py", 29),
                f"ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s={t - exec_start:.1f}",
                "ERROR",
            ),
        )
        frames = [
            "Traceback (most recent call last):",
            '  File "/root/miles/miles/utils/tracking_utils/structured_log.py", line 61, in wrapper',
            "    return fn(self, *args, **kwargs)",
            '  File "/root/miles/miles/backends/megatron_utils/actor.py", line 398, in train',
            '    rollout_data["log_probs"] = self.compute_log_prob(',
            "                                ^^^^^^^^^^^^^^^^^^^^^^",
            '  File "/root/miles/miles/backends/megatron_utils/model.py", line 311, in forward_only',
            "    output_tensor = model(**batch)",
            oom,
        ]
        for k, text in enumerate(frames):
            ch.add(t + 1e-4 * (k + 1), L.bare(t, "rank0", text))
        t += 0.3
        ch.add(
            t,
            L.dedup(
                L.log(
                    t,
                    "rank7",
                    ("structured_log.py", 29),
                    f"ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s={t - exec_start:.1f}",
                    "ERROR",
                )
            ),
        )
        t += 0.5
        ch.add(
            t,
            L.log(
                t,
                "main",
                ("cell.py", 251),
                f"ft op=execute phase=fail cell=0 fn=train elapsed_s={t - exec_start:.1f}",
                "ERROR",
            ),
        )
        main = [
            "Traceback (most recent call last):",
            '  File "/root/miles/miles/ray/train/cell.py", line 234, in _execute_raw',
            "    result = await asyncio.gather(",
            "             ^^^^^^^^^^^^^^^^^^^^^",
            f"ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronTrainRayActor.train() (pid={pid}, "
            "ip=10.0.0.5, actor_id=8e1f0c2b7a4d5e6f9a0b1c2d01000000, repr=<miles.backends.megatron_utils.actor."
            "MegatronTrainRayActor object at 0x7f3b2c1d5e80>)",
            '  File "/root/miles/miles/backends/megatron_utils/actor.py", line 398, in train',
            '    rollout_data["log_probs"] = self.compute_log_prob(',
            "                                ^^^^^^^^^^^^^^^^^^^^^^",
            oom,
        ]
        for k, text in enumerate(main):
            ch.add(t + 1e-4 * (k + 1), L.bare(t, "main", text))
        self._retries(ch, i, t + 0.4)

    def _retries(self, ch: _Chunk, i: int, t: float) -> None:
        L = self.L
        ch.add(t, L.log(t, "main", ("cell.py", 262), "execute_all_alive_and_catch#train error index=0", "WARNING"))
        ch.add(t + 0.2, L.log(t + 0.2, "main", ("cell.py", 301), "ft op=confirm_dead phase=start cell=0 n_actors=8"))
        ch.add(
            t + 1.1,
            L.log(
                t + 1.1,
                "main",
                ("group.py", 212),
                'ft op=check errored=0 discarded= normal=0 decision=retry reason="all alive cells failed"',
            ),
        )
        t += 3.1
        for k in (1, 2):
            ch.add(
                t,
                L.log(
                    t,
                    "main",
                    ("retry_utils.py", 36),
                    f"retry: attempt {k} failed, retrying in {2.0 ** (k - 1):.1f}s",
                    "WARNING",
                ),
            )
            t += 2.0 ** (k - 1) + 0.01
            ch.add(t, L.log(t, "main", ("group.py", 147), f"ft op=train phase=start rollout={i} attempt={k}"))
            t += 0.05
            if k == 1:
                ch.add(
                    t,
                    L.log(
                        t, "main", ("cell.py", 251), "ft op=execute phase=fail cell=0 fn=train elapsed_s=0.0", "ERROR"
                    ),
                )
                ch.add(t + 1e-4, L.bare(t, "main", "AssertionError: Cannot recover when all cells are dead"))
                t += 0.2

    def engine_down(self, i: int) -> Iterator[list[tuple[float, str]]]:
        """Rollout `i` starts generating, the engine dies, and 503 retries run for ~4 minutes."""
        L, rng = self.L, _rng(self.seed, 6, i)
        t0 = self.t
        ch = _Chunk()
        _filler(L, ch, rng, t0 + 1, t0 + 25, min(self.noise, 8))
        t = t0 + 27.3
        ch.add(
            t,
            L.sglang(
                t,
                1,
                f'INFO:     10.0.0.5:{int(rng.integers(40000, 60000))} - "GET /health HTTP/1.1" 503 Service Unavailable',
            ),
            5,
        )
        ch.add(
            t + 8.7,
            L.log(
                t + 8.7,
                "rm",
                ("health_monitor.py", 154),
                "Health check failed for rollout engine 1 (ray timeout or error). Killing actor. "
                "Exception: The actor died unexpectedly before finishing this task.",
                "ERROR",
            ),
        )
        yield ch.lines(self.noise)
        url = f"{ROUTER}/generate"
        for req in range(4):
            ch = _Chunk()
            start = t0 + 30.0 + 55.0 * req
            for k in range(1, 61):
                tt = start + (k - 1) * 1.003 + 0.002 * req
                ch.add(
                    tt,
                    L.log(
                        tt,
                        "rm",
                        ("http_utils.py", 226),
                        f"Error: Server error '503 Service Unavailable' for url '{url}'",
                    ),
                )
                ch.add(
                    tt,
                    L.bare(
                        tt,
                        "rm",
                        "For more information check: https://developer.mozilla.org/en-US/docs/Web/"
                        f"HTTP/Status/503, retrying... (attempt {k}/60, url={url}, response=No available workers)",
                    ),
                )
                if k % 15 == 7:
                    ch.add(
                        tt + 0.4,
                        L.sglang(
                            tt + 0.4, 1, 'INFO:     10.0.0.5:51990 - "GET /health HTTP/1.1" 503 Service Unavailable'
                        ),
                        5,
                    )
            tt = start + 60 * 1.003
            ch.add(tt, L.log(tt, "rm", ("http_utils.py", 230), f"Max retries (60) reached, failing... (url={url})"))
            yield ch.lines(self.noise)

    def stalled(self) -> list[tuple[float, str]]:
        """A few dwindling decode lines after the last rollout, then only the engines' health
        checks for 15 minutes: the trainer hangs (an NCCL wait) while the engines stay up."""
        ch, rng = _Chunk(), _rng(self.seed, 7, 0)
        _filler(self.L, ch, rng, self.t + 2, self.t + 150, min(self.noise, 5))
        minutes = 15
        if self.su.name != "manual" and self.onset:
            # a hang outlasts this setup's own rollout interval several times over
            minutes = max(15, math.ceil(6 * (self.t - 150.0) / self.onset / 60))
        for minute in range(1, minutes + 1):
            t = self.t + 150 + 60 * minute
            ch.add(t, self.L.sglang(t, 0, 'INFO:     10.0.0.5:41000 - "GET /health HTTP/1.1" 200 OK'), 5)
        return ch.lines(None)

    def no_steps(self) -> Iterator[list[tuple[float, str]]]:
        """Engines never come up: `wait_all_engines_alive looping...` every 30 s for 16.5 minutes."""
        L = self.L
        for minute in range(17):
            ch = _Chunk()
            for half in range(2):
                t = 150.0 + 60 * minute + 30 * half
                if t > 150.0 + 990:
                    break
                ch.add(t, L.log(t, "rm", ("server_group.py", 118), "wait_all_engines_alive looping..."))
                for e in range(min(self.noise // 4, GPUS)):
                    tt = t + 3 + e * 0.7
                    ch.add(
                        tt,
                        L.sglang(
                            tt, e, f'INFO:     10.0.0.5:{41000 + e} - "GET /health HTTP/1.1" 503 Service Unavailable'
                        ),
                        5,
                    )
            yield ch.lines(None)

    def finish(self) -> list[tuple[float, str]]:
        """Clean end of a completed run: final save and Ray's success box (only with noise on)."""
        if not self.noise:
            return []
        ch, t, L = _Chunk(), self.t + 1, self.L
        t = self._checkpoint(ch, self.n - 1, t) if self.n % 20 else t
        for k, text in enumerate(["-" * 40, "Job 'raysubmit_8fQz2nLq1cVhXw3T' succeeded", "-" * 40]):
            ch.add(t + 5 + k * 1e-3, (L.t0 + round(t + 5 + k * 1e-3, 3), text))
        return ch.lines(None)


def _chunks(
    scenario, rollouts, seed, K, fmt, noise, onset, start, setup="manual", pace=1.0
) -> Iterator[list[tuple[float, str]]]:
    """The log as chunks: start-up, one per rollout, then the scenario's ending."""
    run = _Run(scenario, rollouts, seed, K, fmt, noise, onset, start, setup_of(setup), pace)
    yield run.startup()
    if scenario == "no-steps":
        yield from run.no_steps()
        return
    stop = rollouts if run.onset is None or scenario not in _ENDLESS else min(run.onset, rollouts)
    for i in range(stop):
        yield run.rollout(i)
    if scenario in _ENDLESS and run.onset is not None and run.onset < rollouts:
        if scenario == "crashed":
            yield run.rollout(run.onset)
        elif scenario == "engine-down":
            yield from run.engine_down(run.onset)
        elif scenario == "stalled":
            yield run.stalled()
        return
    yield run.finish()
