"""Rules the engine judges on events and on the clock, not on metric rows (judge/engine.py):
no metric at all, the rollout engine down, a crash, a stall."""

from __future__ import annotations

from .base import RuleInfo

INFO = (
    RuleInfo("no-steps", "critical", "engine or trainer did not start", "launcher/engine start-up lines", ()),
    RuleInfo("engine-down", "critical", "rollout engine died", "engine log, OOM, router health", ()),
    RuleInfo("crashed", "critical", "a process failed", "the first failing traceback, not the last", ()),
    RuleInfo("stalled", "critical", "hang, dead engine, NCCL timeout", "py-spy dump, engine health", ()),
)
