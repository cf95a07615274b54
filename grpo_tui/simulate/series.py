"""The simulated metric values: per rollout and per train step, for the manual's setup and the
others, with each scenario's break from its onset on.  One generator per rollout and per step, all
from the seed, so a longer run starts as a shorter one does."""

from __future__ import annotations

import math

import numpy as np

from .setups import BATCH, CAP, GROUPS, PROMPT_LEN, Setup


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
    # (the manual setup logs KL to the reference only in the kl-ref scenario)
    out = _train_steps(scenario, gap, kl, grad, r, j, z, u, d, hit, pace, seed, None, 47.0)
    if scenario == "non-finite":
        _break_finite(out, u[:, 5], hit, onset, K)
    if scenario == "entropy-high":
        _near_random(out, 0.40, r, seed, hit)
    return out


def _train_steps(
    scenario: str,
    gap: np.ndarray,
    kl: np.ndarray,
    grad: np.ndarray,
    r: np.ndarray,
    j: np.ndarray,
    z: np.ndarray,
    u: np.ndarray,
    d: np.ndarray,
    hit: np.ndarray,
    pace: float,
    seed: int,
    kl_ref: float | None,
    horizon: float,
) -> dict[str, list]:
    """The train step series of every setup from its healthy gap, KL and grad norm: the clip
    statistics of the K updates, the scenario's break, and KL to the reference when the setup
    logs it (or the scenario is kl-ref)."""
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
    elif scenario == "no-update":
        grad = np.where(hit, 0.0, grad)
    elif scenario == "off-policy":
        clip = np.where(hit, 0.002 + 0.018 * u[:, 2], clip)
        ppo_kl = np.where(hit, 1e-4 + 9e-4 * u[:, 3], ppo_kl)
        ess = np.where(hit, 0.995 - 0.035 * u[:, 4], ess)
    loss = np.where(hit, 0.0, 0.002 * z[:, 3]) if scenario == "no-update" else 0.002 * z[:, 3]
    out: dict[str, list] = {
        "gap": gap.tolist(),
        "kl": kl.tolist(),
        "grad": grad.tolist(),
        "clip": clip.tolist(),
        "ppo_kl": ppo_kl.tolist(),
        "ess": ess.tolist(),
        "loss": loss.tolist(),
    }
    if kl_ref is not None or scenario == "kl-ref":
        ramp = d if scenario == "kl-ref" else 0.0 * d
        out["kl_ref"] = _kl_ref_series(kl_ref or KL_REF_LEVEL, horizon, r, seed, float(z[0, 4]), ramp, pace)
    return out


KL_REF_LEVEL = 0.01  # KL to the reference at the horizon, for a setup that sets none (the kl-ref scenario)


def _kl_ref_series(
    level: float, horizon: float, r: np.ndarray, seed: int, z0: float, d: np.ndarray, pace: float
) -> list:
    """KL to the reference per step: 0 at the first (the policy starts as the reference), then a
    slowing climb to `level`; from the kl-ref onset x1.6 a rollout (x100 in 10).  Its own
    generator, so the other series stay those of the same seed without it."""
    kz = np.array([_rng(seed, 20, i).normal() for i in range(len(r))])
    kl = level * math.exp(0.3 * z0) * np.minimum(r / horizon, 1.5) ** 0.8 * np.exp(0.15 * kz)
    return (kl * 1.6 ** (pace * d)).tolist()


def _near_random(out: dict, e0: float, r: np.ndarray, seed: int, hit: np.ndarray) -> None:
    """Entropy per step for the entropy-high scenario: the setup's own (or e0's) before the
    onset, ~9 nats after it (a real verl LoRA run logged 9.49 with every answer at the cap)."""
    ez = np.array([_rng(seed, 21, i).normal() for i in range(len(r))])
    before = np.asarray(out["entropy"]) if "entropy" in out else e0 * np.exp(0.03 * ez)
    out["entropy"] = np.where(hit, 9.0 * np.exp(0.02 * ez), before).tolist()


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


def _dip(su: Setup, seed: int, r: np.ndarray) -> np.ndarray:
    """A healthy reward dip for some seeds of a setup with `dips`: 0.04-0.12 deep (a half sine)
    over 8-32 rollouts somewhere in the middle of the run, while length keeps its curve.  Drawn
    from a stream of its own, so every other series of the seed is unchanged."""
    if not su.dips:
        return np.zeros(len(r))
    u = _rng(seed, 14, 0).random(size=4)
    if u[0] >= su.dips:
        return np.zeros(len(r))
    span = 8.0 + 24.0 * u[1]
    at = su.rollouts * (0.25 + 0.45 * u[2])  # (the setup's length, not this run's: a prefix stays one)
    depth = 0.04 + 0.08 * u[3]
    x = (r - at) / span
    return np.where((x > 0) & (x < 1), depth * np.sin(np.pi * np.clip(x, 0.0, 1.0)), 0.0)


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
    true_r = np.clip(_curve(su, lv, r, "reward") + 0.02 * _ar1(z[:, 0], 0.9) - _dip(su, seed, r), 0.005, 0.995)
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
    out = _train_steps(scenario, gap, kl, grad, r, j, z, u, d, hit, pace, seed, su.kl_ref, su.horizon)
    if su.entropy is not None:
        e0 = su.entropy * lv["ent"]
        ent = e0 * (0.6 + 0.4 * np.exp(-r / max(su.horizon / 3, 1.0))) * np.exp(0.03 * z[:, 5])
        out["entropy"] = ent.tolist()
    if scenario == "non-finite":
        _break_finite(out, u[:, 5], hit, onset, K)
    if scenario == "entropy-high":
        _near_random(out, su.entropy or 0.40, r, seed, hit)
    return out
