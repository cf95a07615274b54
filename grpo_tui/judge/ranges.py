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
import tomllib
from dataclasses import dataclass, field

import numpy as np

from .calibration import Envelope
from .signals import BY_ID, SIGNALS, default_range


class RangesError(Exception):
    """Shown to the user as is: `FILE:LINE: what is wrong`."""


@dataclass
class RangeSet:
    envelopes: dict[str, Envelope] = field(default_factory=dict)
    constant: dict[str, tuple[float, float]] = field(default_factory=dict)
    sigmas: dict[str, float] = field(default_factory=dict)
    path: str | None = None
    meta: dict = field(default_factory=dict)
    use_defaults: bool = True       # the manual's ranges only fit Miles/slime runs of its setup

    def for_framework(self, framework: str) -> "RangeSet":
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
        out_lo = np.full(len(rollouts), math.nan)
        out_hi = np.full(len(rollouts), math.nan)
        any_ok = False
        for i, r in enumerate(rollouts):
            b = self.bounds(sig_id, int(r))
            if b is not None:
                out_lo[i], out_hi[i] = b
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


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return 1


def load_ranges(path: str | None) -> RangeSet:
    """Read a ranges TOML; RangesError with `path:line: reason` on any problem."""
    if not path:
        return defaults()
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise RangesError(f"{path}: cannot read ranges file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError:
        raise RangesError(f"{path}:1: not a text (UTF-8) file") from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        line = msg.split("line ")[-1].split(",")[0] if "line " in msg else "1"
        raise RangesError(f"{path}:{line}: invalid TOML: {msg}") from None
    out = RangeSet(path=path, meta=doc.get("meta", {}) if isinstance(doc.get("meta"), dict) else {})
    sigs = doc.get("signals", {})
    if not isinstance(sigs, dict):
        raise RangesError(f"{path}:{_line_of(text, 'signals')}: `signals` must be a table of signal ids")
    for sig_id, table in sigs.items():
        where = f"{path}:{_line_of(text, f'[signals.{sig_id}]')}"
        if sig_id not in BY_ID:
            known = ", ".join(s.id for s in SIGNALS)
            raise RangesError(f"{where}: unknown signal `{sig_id}` (known: {known})")
        if not isinstance(table, dict):
            raise RangesError(f"{where}: `signals.{sig_id}` must be a table")
        try:
            _load_signal(out, sig_id, table)
        except (TypeError, ValueError, KeyError) as exc:
            raise RangesError(f"{where}: signals.{sig_id}: {exc}") from None
    return out


def _load_signal(out: RangeSet, sig_id: str, t: dict) -> None:
    lo, hi = t.get("lo"), t.get("hi")
    if lo is None or hi is None:
        raise ValueError("needs both `lo` and `hi`")
    if isinstance(lo, list) or isinstance(hi, list):
        steps = t.get("steps")
        if not (isinstance(steps, list) and isinstance(lo, list) and isinstance(hi, list)
                and len(steps) == len(lo) == len(hi) and steps):
            raise ValueError("`steps`, `lo` and `hi` must be lists of the same, non-zero length")
        env = Envelope.from_dict({
            "steps": steps, "lo": lo, "hi": hi, "centre": t.get("centre", [(a + b) / 2 for a, b in zip(lo, hi)]),
            "sigma0": float(t.get("sigma0", BY_ID[sig_id].sigma0)), "kind": str(t.get("kind", "trending")),
            "log": bool(t.get("log", False)), "eps": float(t.get("eps", 0.0)),
            "margin": float(t.get("margin", 2.0)),
        })
        if np.any(np.asarray(env.lo, float) > np.asarray(env.hi, float)):
            raise ValueError("`lo` is above `hi` somewhere")
        out.envelopes[sig_id] = env
    else:
        lo, hi = float(lo), float(hi)
        if lo > hi:
            raise ValueError(f"lo {lo} is above hi {hi}")
        out.constant[sig_id] = (lo, hi)
    if "sigma0" in t and not isinstance(lo, list):
        out.sigmas[sig_id] = float(t["sigma0"])


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
