"""`grpo-tui check PATH [--ranges FILE] [--json]`: a verdict with Nagios exit codes."""

from __future__ import annotations

import json
import sys

from ..lines.files import InputError
from ..judge.ranges import RangesError, load_ranges
from ..judge.signals import BY_ID
from ..verdict import judge_file

EXIT = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}
BADGE = {"ok": "✓ ok", "warning": "! warning", "critical": "✗ critical", "unknown": "? unknown"}


def _fmt(sig_id: str, v) -> str:
    if v is None:
        return "-"
    try:
        return BY_ID[sig_id].fmt.format(v)
    except (ValueError, TypeError):
        return str(v)


def run(args) -> int:
    try:
        ranges = load_ranges(args.ranges)
    except RangesError as exc:
        return _unknown(args, str(exc))
    try:
        judged = judge_file(args.path, ranges)
    except InputError as exc:
        return _unknown(args, str(exc))
    report = judged.engine.report()
    counts = judged.parser.counts
    if args.json:
        obj = report.to_json(args.path)
        print(json.dumps(obj, allow_nan=False))
    else:
        _print_human(args.path, report, counts)
    return EXIT[report.status]


def _unknown(args, message: str) -> int:
    print(f"grpo-tui check: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"path": args.path, "status": "unknown", "rollouts": 0, "last_rollout": None,
                          "steps_per_rollout": 1, "signals": {}, "alerts": [], "error": message}))
    return EXIT["unknown"]


def _print_human(path: str, report, counts) -> None:
    w = sys.stdout.write
    w(f"{path}: {report.status.upper()}  ({report.rollouts} rollouts, last {report.last_rollout}, "
      f"{report.steps_per_rollout} step(s)/rollout"
      + (f", {report.segments} run segments (latest judged)" if report.segments > 1 else "") + ")\n")
    w(f"{'signal':<16} {'last':>10} {'mean5':>10} {'range':>21}  status\n")
    for sid, s in report.signals.items():
        rng = f"{_fmt(sid, s.range[0])}-{_fmt(sid, s.range[1])}" if s.range else "-"
        w(f"{s.label:<16} {_fmt(sid, s.last):>10} {_fmt(sid, s.mean5):>10} {rng:>21}  {BADGE[s.status]}\n")
    if report.alerts:
        w("\nalerts (newest first):\n")
        for a in report.alerts:
            state = "" if a.active else f" (cleared at rollout {a.cleared_at})"
            w(f"  [{a.severity.upper()}] {a.rule} from rollout {a.rollout}{state}: {a.message}\n")
            w(f"      means: {a.meaning}; check first: {a.check}\n")
            ev = json.dumps(a.evidence, default=str)
            w(f"      evidence: {ev[:300]}\n")
    w(f"\n{counts.lines} lines read: {counts.records} metric records, {counts.event_lines} event lines, "
      f"{counts.noise} noise, {counts.unreadable} unreadable, {counts.cut_records} cut records\n")
