"""Healthy ranges: the manual's defaults, or the user's own from a TOML file (`calibrate`).

TOML format (documented in README.md):

    [signals.reward]            # one table per signal id
    lo = 0.53                   # a constant band ...
    hi = 0.87
    # ... or a step-aligned envelope written by `grpo-tui calibrate`:
    steps = [0, 1, 2]; lo = [..]; hi = [..]; centre = [..]; sigma0 = 0.03; kind = "trending"; log = false

A bad file is an error naming the file and the line, never a traceback.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..output import safe_text
from ..tomlfile import header_line, key_line, kind_of, read_toml, where
from .calibration import Envelope
from .signals import BY_ID, EARLY_ROLLOUTS, SIGNALS, default_range


class RangesError(Exception):
    """Shown to the user as is: `FILE:LINE: what is wrong`."""


@dataclass
class RangeSet:
    envelopes: dict[str, Envelope] = field(default_factory=dict)
    constant: dict[str, tuple[float, float]] = field(default_factory=dict)
    sigmas: dict[str, float] = field(default_factory=dict)
    path: str | None = None
    meta: dict = field(default_factory=dict)
    use_defaults: bool = True  # the manual's ranges only fit Miles/slime runs of its setup

    def for_framework(self, framework: str) -> RangeSet:
        """verl/TRL runs: keep calibrated ranges, drop the Miles defaults."""
        if framework == "miles" or not self.use_defaults:
            return self
        return RangeSet(self.envelopes, self.constant, self.sigmas, self.path, self.meta, use_defaults=False)

    def source(self, sig_id: str) -> str:
        return "calibrated" if (sig_id in self.envelopes or sig_id in self.constant) else "default"

    def bounds(self, sig_id: str, rollout: int) -> tuple[float, float] | None:
        env = self.envelopes.get(sig_id)
        if env is not None:
            lo, hi = env.bounds_at(rollout)
            return float(lo), float(hi)
        if sig_id in self.constant:
            return self.constant[sig_id]
        return default_range(BY_ID[sig_id], rollout) if self.use_defaults else None

    def bounds_many(self, sig_id: str, rollouts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        env = self.envelopes.get(sig_id)
        if env is not None:
            lo, hi = env.bounds_at(np.asarray(rollouts, dtype=float))
            return np.asarray(lo, float), np.asarray(hi, float)
        # bounds() of each rollout, by array: a constant band, else the manual's early set for
        # the first rollouts and its whole-run set after (a held alert's rule asks this at every
        # rollout, for every rollout of its window: a Python call each was too slow)
        early_b: tuple[float, float] | None
        whole_b: tuple[float, float] | None
        if sig_id in self.constant:
            early_b = whole_b = self.constant[sig_id]
        elif self.use_defaults:
            sig = BY_ID[sig_id]
            early_b, whole_b = default_range(sig, 0), default_range(sig, EARLY_ROLLOUTS)
        else:
            return None
        early = np.asarray(rollouts) < EARLY_ROLLOUTS
        if not early.any():  # (past the first rollouts: the usual window, one band)
            if whole_b is None or not len(early):
                return None
            return np.full(len(early), float(whole_b[0])), np.full(len(early), float(whole_b[1]))
        out_lo = np.full(len(early), math.nan)
        out_hi = np.full(len(early), math.nan)
        any_ok = False
        for rows, b in ((early, early_b), (~early, whole_b)):
            if b is not None and rows.any():
                out_lo[rows], out_hi[rows] = b
                any_ok = True
        return (out_lo, out_hi) if any_ok else None

    def sigma0(self, sig_id: str) -> float:
        """Noise scale in the signal's judging scale (log units for log signals)."""
        if sig_id in self.sigmas:
            return self.sigmas[sig_id]
        env = self.envelopes.get(sig_id)
        if env is not None:
            return float(env.sigma0)
        return BY_ID[sig_id].sigma0

    def extrapolated(self, sig_id: str, rollout: int) -> bool:
        env = self.envelopes.get(sig_id)
        return bool(env is not None and env.extrapolated(rollout))


def defaults() -> RangeSet:
    return RangeSet()


MAX_DEPTH = 5  # containers: document > signals > id > list (meta: up to 5 as well)
KINDS = ("trending", "flat")
SIGNAL_KEYS = ("lo", "hi", "steps", "centre", "sigma0", "kind", "log", "eps", "margin")


class _Bad(ValueError):
    """One problem in a signal table, with the key it is about (for the line number)."""

    def __init__(self, key: str | None, reason: str) -> None:
        super().__init__(reason)
        self.key = key


def load_ranges(path: str | None) -> RangeSet:
    """Read a ranges TOML; RangesError with `FILE:LINE: reason` (or `FILE: reason`) on any problem.

    Every value is checked here, so a bad file fails at start-up with its line, never later
    as a nan band, a crash in np.interp, or a silently ignored typo.
    """
    if not path:
        return defaults()
    doc, lines = read_toml(path, "ranges file", RangesError, MAX_DEPTH)
    name = safe_text(path)
    for key in doc:
        if key not in ("meta", "signals"):
            line = next((i for i, ln in enumerate(lines, 1) if key in ln), None)
            raise RangesError(
                f"{where(name, line)}: unknown top-level key `{safe_text(key)}` "
                f"(a ranges file has [meta] and [signals.<id>] tables)"
            )
    meta = doc.get("meta", {})
    if not isinstance(meta, dict):
        raise RangesError(f"{name}: `meta` must be a table")
    out = RangeSet(path=path, meta=meta)
    sigs = doc.get("signals", {})
    if not isinstance(sigs, dict):
        raise RangesError(f"{name}: `signals` must be a table of signal ids")
    for sig_id, table in sigs.items():
        if sig_id not in BY_ID:
            known = ", ".join(s.id for s in SIGNALS)
            raise RangesError(
                f"{where(name, header_line(lines, ('signals', sig_id)))}: unknown signal `{safe_text(sig_id)}` (known: {known})"
            )
        if not isinstance(table, dict):
            raise RangesError(
                f"{where(name, key_line(lines, ('signals', sig_id), None))}: `signals.{sig_id}` must be a table"
            )
        try:
            _load_signal(out, sig_id, table)
        except _Bad as exc:
            raise RangesError(
                f"{where(name, key_line(lines, ('signals', sig_id), exc.key))}: signals.{sig_id}: {safe_text(exc)}"
            ) from None
    return out


def _num(t: dict, key: str, *, lo: float | None = None, above: float | None = None) -> float:
    """A finite number (not a bool, not a string) at least `lo` / greater than `above`."""
    v = t[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(key, f"`{key}` must be a number, not {kind_of(v)}")
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise _Bad(key, f"`{key}` must be finite, got {v}")
    if lo is not None and f < lo:
        raise _Bad(key, f"`{key}` must be >= {lo:g}, got {f:g}")
    if above is not None and f <= above:
        raise _Bad(key, f"`{key}` must be > {above:g}, got {f:g}")
    return f


def _nums(t: dict, key: str, n: int | None = None) -> np.ndarray:
    """A non-empty list of finite numbers (of length n when given)."""
    v = t[key]
    if not isinstance(v, list) or not v:
        raise _Bad(key, f"`{key}` must be a non-empty list of numbers")
    out = np.asarray([_num({key: x}, key) for x in v], dtype=float)
    if n is not None and len(out) != n:
        raise _Bad(key, f"`{key}` has {len(out)} values, `steps` has {n}")
    return out


def _load_signal(out: RangeSet, sig_id: str, t: dict) -> None:
    """Validate one [signals.<id>] table and add it to `out` (raises _Bad).

    sigma0 = 0 and lo == hi stay valid: calibrate writes both for a signal that was 0 in
    every seed (clip fraction), meaning "must stay exactly 0".
    """
    for key in t:
        if key not in SIGNAL_KEYS:
            raise _Bad(key, f"unknown key `{key}` (known: {', '.join(SIGNAL_KEYS)})")
    for key in ("lo", "hi"):
        if key not in t:
            raise _Bad(None, "needs both `lo` and `hi`")
    sigma0 = _num(t, "sigma0", lo=0.0) if "sigma0" in t else None
    if "kind" in t and t["kind"] not in KINDS:
        raise _Bad("kind", f"`kind` must be one of {', '.join(KINDS)}, got {safe_text(t['kind'])!r}")
    if "log" in t and not isinstance(t["log"], bool):
        raise _Bad("log", f"`log` must be true or false, not {kind_of(t['log'])}")
    eps = _num(t, "eps", lo=0.0) if "eps" in t else 0.0
    margin = _num(t, "margin", above=0.0) if "margin" in t else 2.0
    if not isinstance(t["lo"], list) and not isinstance(t["hi"], list):
        if "steps" in t or "centre" in t:
            raise _Bad(
                "steps" if "steps" in t else "centre", "`steps`/`centre` need `lo` and `hi` lists (one value per step)"
            )
        lo1, hi1 = _num(t, "lo"), _num(t, "hi")
        if lo1 > hi1:
            raise _Bad("lo", f"lo {lo1:g} is above hi {hi1:g}")
        out.constant[sig_id] = (lo1, hi1)
        if sigma0 is not None:
            out.sigmas[sig_id] = sigma0
        return
    if "steps" not in t:
        raise _Bad("lo", "`lo` and `hi` lists need a `steps` list (the rollout ids)")
    steps = _nums(t, "steps")
    if np.any(np.diff(steps) <= 0):
        raise _Bad("steps", "`steps` must be strictly increasing")
    lo, hi = _nums(t, "lo", len(steps)), _nums(t, "hi", len(steps))
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        i = int(bad[0])
        raise _Bad("lo", f"lo {lo[i]:g} is above hi {hi[i]:g} at step {steps[i]:g}")
    centre = _nums(t, "centre", len(steps)) if "centre" in t else (lo + hi) / 2
    log = bool(t.get("log", False))
    if log:
        for key, arr in (("lo", lo), ("hi", hi), ("centre", centre)):
            if np.any(arr + eps < 0):
                raise _Bad(key, f"`{key}` + eps must not be negative when log = true (log scale)")
    out.envelopes[sig_id] = Envelope(
        steps,
        lo,
        hi,
        centre,
        sigma0 if sigma0 is not None else BY_ID[sig_id].sigma0,
        str(t.get("kind", "trending")),
        log,
        eps=eps,
        margin=margin,
    )


def _fmt(v) -> str:
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return repr(f) if math.isfinite(f) else ("nan" if math.isnan(f) else ("inf" if f > 0 else "-inf"))
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    s = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", s)  # TOML forbids raw controls
    return f'"{s}"'


def dump_ranges(envelopes: dict[str, Envelope], meta: dict, notes: dict[str, str] | None = None) -> str:
    """TOML text for `calibrate -o`."""
    lines = ["# grpo-tui healthy ranges, made by `grpo-tui calibrate`. Load with --ranges FILE.", "[meta]"]
    for k, v in meta.items():
        lines.append(f"{k} = {_fmt(v)}")
    for sig_id, env in envelopes.items():
        d = env.to_dict()
        lines.append("")
        if notes and sig_id in notes:
            lines.append(f"# {notes[sig_id]}")
        lines.append(f"[signals.{sig_id}]")
        for k in ("kind", "log", "sigma0", "margin", "eps", "steps", "lo", "hi", "centre"):
            if k in d:
                lines.append(f"{k} = {_fmt(d[k])}")
    return "\n".join(lines) + "\n"
