"""Healthy ranges from 2-3 baseline seed runs (docs/health-signs.md §6).

Per-step std from 2-3 seeds is useless and raw min/max of the seeds is far
too tight, so the noise scale is pooled over all seeds and steps and the
envelope is the seeds' own values widened by M * sigma0.

Conventions:
- ``log=True`` calibrates log(x + eps) (heavy-tailed positive metrics:
  grad_norm, KL, gap, rollout time). ``lo/hi/centre`` are stored back in the
  metric's own units, but ``sigma0`` stays in log units, because that is the
  scale the rules use (delta = max(3 sigma0, log 2)). Use
  ``Envelope.transform`` on a live series to reach the same scale.
- A metric that is exactly 0 in every seed (clipfrac with one update per
  rollout) gets sigma0 = 0 and lo = hi = 0 (stored with log=False, since
  log(0) has no scale): it needs a hard "must be 0" rule, not a noise scale,
  and the zero band expresses exactly that. Any value > 0 is outside it.
  With ``zero_band=False`` (a cut share the seeds never hit) the band is
  [0, margin * abs_floor] instead: the floor is the measurement's own noise.
- ``domain=(lo, hi)`` clips a band to the values the metric can take (ratios
  in [0, 1], counts >= 0); log bands are > 0 by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grpo_tui.judge.stats import MAD_TO_SIGMA, persistent_above, persistent_below

KINDS = ("trending", "flat")
CENTRE_WIDTH = 5
ENVELOPE_HALF = 2  # hi(t) looks at steps t-2..t+2
WARMUP_STEPS = 2
MIN_FLAT_AFTER_WARMUP = 5
HOLD_LAST = 5
WIDEN_PER_STEP = 0.1  # sigma0 per step beyond the calibrated horizon
REL_FLOOR = 0.02
LOG_EPS_MIN = 1e-8
LOG_EPS_REL = 0.01

__all__ = ["Envelope", "calibrate", "leave_one_out", "calibrate_with_check"]


@dataclass
class Envelope:
    """Step-aligned healthy band for one metric (own units; sigma0 in calibration units)."""

    steps: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    centre: np.ndarray
    sigma0: float
    kind: str
    log: bool
    eps: float = 0.0
    margin: float = 2.0

    # -- scale conversions: extrapolation must widen in the calibration scale
    def transform(self, x):
        """Map metric values onto the scale sigma0 lives in."""
        x = np.asarray(x, dtype=float)
        if not self.log:
            return x
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(x + self.eps)

    def inverse(self, y):
        """Back from the calibration scale to metric units."""
        y = np.asarray(y, dtype=float)
        return np.exp(y) - self.eps if self.log else y

    def bounds_at(self, step):
        """(lo, hi) at a step; past the horizon hold the last 5 steps and widen.

        Interpolates between calibrated steps (logs may skip rollouts) and holds
        the first value before the first step. Scalars in, floats out; arrays
        in, arrays out.
        """
        s = np.asarray(step, dtype=float)
        lo_t, hi_t = self.transform(self.lo), self.transform(self.hi)
        lo = np.interp(s, self.steps, lo_t)
        hi = np.interp(s, self.steps, hi_t)
        beyond = s > self.steps[-1]
        if np.any(beyond):
            extra = WIDEN_PER_STEP * self.sigma0 * (s - self.steps[-1])
            lo = np.where(beyond, np.min(lo_t[-HOLD_LAST:]) - extra, lo)
            hi = np.where(beyond, np.max(hi_t[-HOLD_LAST:]) + extra, hi)
        lo, hi = self.inverse(lo), self.inverse(hi)
        if np.any(beyond) and np.all(np.asarray(self.lo) >= 0):
            lo = np.maximum(lo, 0.0)  # widening never takes a non-negative metric's band below 0
        if s.ndim == 0:
            return float(lo), float(hi)
        return lo, hi

    def extrapolated(self, step) -> bool:
        """True past the calibrated horizon: the badge should say so."""
        return bool(float(step) > float(self.steps[-1]))

    def to_dict(self) -> dict:
        """Plain floats/lists only, for TOML or JSON."""
        return {
            "steps": [float(v) for v in self.steps],
            "lo": [float(v) for v in self.lo],
            "hi": [float(v) for v in self.hi],
            "centre": [float(v) for v in self.centre],
            "sigma0": float(self.sigma0),
            "kind": self.kind,
            "log": bool(self.log),
            "eps": float(self.eps),
            "margin": float(self.margin),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Envelope:
        """Inverse of to_dict; tolerates missing eps/margin (older files)."""
        return cls(
            steps=np.asarray(d["steps"], dtype=float),
            lo=np.asarray(d["lo"], dtype=float),
            hi=np.asarray(d["hi"], dtype=float),
            centre=np.asarray(d["centre"], dtype=float),
            sigma0=float(d["sigma0"]),
            kind=str(d["kind"]),
            log=bool(d["log"]),
            eps=float(d.get("eps", 0.0)),
            margin=float(d.get("margin", 2.0)),
        )


# ---------------------------------------------------------------- building blocks


def _clean(seed_series) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for steps, values in seed_series:
        s = np.asarray(steps, dtype=float).ravel()
        v = np.asarray(values, dtype=float).ravel()
        if s.shape != v.shape:
            raise ValueError("steps and values must have the same length")
        ok = np.isfinite(s) & np.isfinite(v)
        out.append((s[ok], v[ok]))
    return out


def _grid(seeds) -> tuple[np.ndarray, np.ndarray]:
    """Align seeds on the union of their steps: (steps, matrix S x T with NaN gaps)."""
    steps = np.unique(np.concatenate([s for s, _ in seeds]))
    mat = np.full((len(seeds), steps.size), np.nan)
    for row, (s, v) in enumerate(seeds):
        mat[row, np.searchsorted(steps, s)] = v  # duplicate steps: last one wins
    return steps, mat


def _rolling(a: np.ndarray, half: int, fn) -> np.ndarray:
    """Rolling fn over indices t-half..t+half, truncated at the edges (envelope)."""
    n = a.shape[-1]
    return np.array([fn(a[..., max(0, t - half) : t + half + 1]) for t in range(n)])


def _centred_median(a: np.ndarray, half: int) -> np.ndarray:
    """Rolling median that shrinks symmetrically at the ends.

    A truncated one-sided window at the ends would pull the centre of a
    trending metric inward and inflate the residuals there.
    """
    n = a.size
    out = np.empty(n)
    for t in range(n):
        h = min(half, t, n - 1 - t)
        out[t] = np.median(a[t - h : t + h + 1])
    return out


def _log_eps(values: np.ndarray) -> float:
    """1 % of the baseline median keeps exact zeros from becoming -18 outliers."""
    pos = values[values > 0]
    med = float(np.median(pos)) if pos.size else 0.0
    return max(LOG_EPS_MIN, LOG_EPS_REL * med)


def _sigma0(resid: np.ndarray, n_seeds: int, centre: np.ndarray, abs_floor: float, log: bool) -> float:
    """Pooled 1.4826*MAD, corrected for the centre being fitted on the same seeds, floored."""
    r = resid[np.isfinite(resid)]
    mad = float(np.median(np.abs(r - np.median(r)))) if r.size else 0.0
    corr = math.sqrt(n_seeds / (n_seeds - 1)) if n_seeds > 1 else 1.0
    # In log units a difference already is relative: 0.02 means 2 %.
    rel = REL_FLOOR if log else REL_FLOOR * abs(float(np.median(centre)))
    return max(MAD_TO_SIGMA * mad * corr, abs_floor, rel)


def _band_trending(mat: np.ndarray, sigma0: float, margin: float):
    top = _rolling(np.nanmax(mat, axis=0), ENVELOPE_HALF, np.nanmax)
    bottom = _rolling(np.nanmin(mat, axis=0), ENVELOPE_HALF, np.nanmin)
    return bottom - margin * sigma0, top + margin * sigma0


def _band_flat(mat: np.ndarray, sigma0: float, margin: float):
    """One constant band after warm-up; warm-up steps also cover their own values."""
    t = mat.shape[1]
    skip = WARMUP_STEPS if t - WARMUP_STEPS >= MIN_FLAT_AFTER_WARMUP else 0
    body = mat[:, skip:]
    lo = np.full(t, np.nanmin(body) - margin * sigma0)
    hi = np.full(t, np.nanmax(body) + margin * sigma0)
    if skip:
        lo[:skip] = np.minimum(lo[:skip], np.nanmin(mat[:, :skip], axis=0) - margin * sigma0)
        hi[:skip] = np.maximum(hi[:skip], np.nanmax(mat[:, :skip], axis=0) + margin * sigma0)
    return lo, hi


def _zero_envelope(steps: np.ndarray, kind: str, margin: float) -> Envelope:
    """All-zero baseline: band [0, 0], sigma0 = 0, stored linear (log(0) has no scale)."""
    z = np.zeros(steps.size)
    return Envelope(steps, z.copy(), z.copy(), z.copy(), 0.0, kind, False, eps=0.0, margin=margin)


def _to_log(seeds, eps: float):
    """log(x + eps) per seed; points that cannot be logged become gaps."""
    out = []
    for s, v in seeds:
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.log(v + eps)
        ok = np.isfinite(y)
        if ok.any():
            out.append((s[ok], y[ok]))
    if not out:
        raise ValueError("no positive values to calibrate in log space")
    return out


# ---------------------------------------------------------------- public API


def _clip_domain(env: Envelope, domain) -> Envelope:
    lo_d, hi_d = domain if domain is not None else (None, None)
    if lo_d is not None:
        env.lo, env.hi, env.centre = (np.maximum(a, lo_d) for a in (env.lo, env.hi, env.centre))
    if hi_d is not None:
        env.lo, env.hi, env.centre = (np.minimum(a, hi_d) for a in (env.lo, env.hi, env.centre))
    return env


def calibrate(
    seed_series,
    kind: str = "trending",
    *,
    margin: float = 2.0,
    abs_floor: float = 1e-4,
    log: bool = False,
    domain: tuple[float | None, float | None] | None = None,
    zero_band: bool = True,
) -> Envelope:
    """Build the envelope for one metric from per-seed (steps, values) series.

    Log mode drops values <= -eps (cannot be logged) as missing.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    seeds = [sv for sv in _clean(seed_series) if sv[0].size]
    if not seeds:
        raise ValueError("no finite points in any seed")
    raw = np.concatenate([v for _, v in seeds])
    if np.all(raw == 0):
        if zero_band:
            return _zero_envelope(_grid(seeds)[0], kind, margin)
        steps = _grid(seeds)[0]
        z = np.zeros(steps.size)
        env = Envelope(
            steps,
            z - margin * abs_floor,
            z + margin * abs_floor,
            z.copy(),
            float(abs_floor),
            kind,
            False,
            eps=0.0,
            margin=margin,
        )
        return _clip_domain(env, domain)
    if log and not np.any(raw > 0):
        log = False
    eps = _log_eps(raw) if log else 0.0
    if log:
        seeds = _to_log(seeds, eps)
    steps, mat = _grid(seeds)
    centre = _centred_median(np.nanmedian(mat, axis=0), CENTRE_WIDTH // 2)
    sigma0 = _sigma0((mat - centre).ravel(), len(seeds), centre, abs_floor, log)
    band = _band_trending if kind == "trending" else _band_flat
    lo, hi = band(mat, sigma0, margin)
    env = Envelope(steps, lo, hi, centre, sigma0, kind, log, eps=eps, margin=margin)
    env.lo, env.hi, env.centre = env.inverse(lo), env.inverse(hi), env.inverse(centre)
    if log:
        # log(x + eps) can undershoot x = 0 by at most eps: a log band stays above 0
        env.lo = np.maximum(env.lo, 0.0)
    return _clip_domain(env, domain)


def _replay(env: Envelope, steps: np.ndarray, values: np.ndarray) -> dict:
    """Held-out seed against an envelope: share outside, first "3 of last 4" hit."""
    lo, hi = env.bounds_at(steps)
    outside = (values < lo) | (values > hi)
    first_hit = None
    for t in range(values.size):
        if persistent_above(values[: t + 1], hi[: t + 1]) or persistent_below(values[: t + 1], lo[: t + 1]):
            first_hit = float(steps[t])
            break
    return {
        "n_points": int(values.size),
        "frac_outside": float(outside.mean()) if values.size else 0.0,
        "persistent_hit": first_hit is not None,
        "first_hit_step": first_hit,
    }


def leave_one_out(
    seed_series,
    kind: str = "trending",
    log: bool = False,
    margin: float = 2.0,
    *,
    abs_floor: float = 1e-4,
    domain=None,
    zero_band: bool = True,
) -> dict:
    """Calibrate on S-1 seeds, replay the held-out one (with S = 2, each against the other)."""
    seeds = _clean(seed_series)
    per_seed = []
    if len(seeds) >= 2:
        for i, (steps, values) in enumerate(seeds):
            others = seeds[:i] + seeds[i + 1 :]
            if not any(s.size for s, _ in others):
                continue
            env = calibrate(
                others, kind, margin=margin, abs_floor=abs_floor, log=log, domain=domain, zero_band=zero_band
            )
            per_seed.append({"held_out": i, **_replay(env, steps, values)})
    return {
        "margin": float(margin),
        "seeds": per_seed,
        "any_persistent": any(r["persistent_hit"] for r in per_seed),
        "max_frac_outside": max((r["frac_outside"] for r in per_seed), default=0.0),
    }


def calibrate_with_check(
    seed_series,
    kind: str = "trending",
    *,
    log: bool = False,
    margin: float = 2.0,
    abs_floor: float = 1e-4,
    widened_margin: float = 3.0,
    domain=None,
    zero_band: bool = True,
) -> tuple[Envelope, bool, dict]:
    """Calibrate; if a held-out seed would go red, raise M (2 -> 3) for this metric.

    Returns (envelope, widened, leave-one-out report at the original margin).
    """
    report = leave_one_out(seed_series, kind, log, margin, abs_floor=abs_floor, domain=domain, zero_band=zero_band)
    widened = report["any_persistent"]
    used = widened_margin if widened else margin
    env = calibrate(seed_series, kind, margin=used, abs_floor=abs_floor, log=log, domain=domain, zero_band=zero_band)
    return env, widened, report
