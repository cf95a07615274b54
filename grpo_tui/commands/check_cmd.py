"""`grpo-tui check PATH [--ranges FILE] [--json]`: a verdict with Nagios exit codes."""

from __future__ import annotations

import json
import sys

from ..judge.ranges import RangesError, load_ranges
from ..judge.signals import BY_ID
from ..lines.files import InputError
from ..output import safe_text
from ..pipeline import fmt_age, judge_path

EXIT = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}
BADGE = {"ok": "✓ ok", "warning": "! warning", "critical": "✗ critical", "unknown": "? n/a"}
safe = safe_text       # log text for a terminal: control characters and bidi overrides neutralised


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
        pipe = judge_path(args.path, ranges, ranges_label=args.ranges or "defaults")
    except InputError as exc:
        return _unknown(args, str(exc))
    report = pipe.report()
    if args.json:
        print(json.dumps(report.to_json(args.path), allow_nan=False, default=str))
    else:
        _print_human(args.path, report, pipe.parser.counts)
    return EXIT[report.status]


def _unknown(args, message: str) -> int:
    print(f"grpo-tui check: {safe(message)}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"path": args.path, "status": "unknown", "state": None, "ranges": None,
                          "rollouts": 0, "last_rollout": None, "steps_per_rollout": 1, "signals": {},
                          "alerts": [], "error": message}))
    return EXIT["unknown"]


def state_text(st) -> str:
    """`finished (Job '...' succeeded), last data 2.0 d ago` — the run's state in words."""
    out = st.label
    if st.name == "finished" and st.finished_by:
        out += f" ({safe(st.finished_by)[:80]})"
    if st.data_age is not None:
        out += f", last metric {fmt_age(st.data_age)} ago"
    elif st.line_age is not None:
        out += f", last line {fmt_age(st.line_age)} ago"
    return out


def _print_human(path: str, report, counts) -> None:
    w = sys.stdout.write
    w(f"{safe(path)}: {report.status.upper()}  ({report.rollouts} rollouts, last {report.last_rollout}, "
      f"{report.steps_per_rollout} step(s)/rollout"
      + (f", {report.segments} run segments (latest judged)" if report.segments > 1 else "") + ")\n")
    w(f"state: {state_text(report.run_state)}; ranges: {safe(report.ranges)}\n")
    w(f"{'signal':<16} {'last':>10} {'mean5':>10} {'range':>21}  status\n")
    for sid, s in report.signals.items():
        rng = f"{_fmt(sid, s.range[0])}-{_fmt(sid, s.range[1])}" if s.range else "-"
        w(f"{s.label:<16} {_fmt(sid, s.last):>10} {_fmt(sid, s.mean5):>10} {rng:>21}  {BADGE[s.status]}\n")
    if report.alerts:
        w("\nalerts (criticals first, newest first):\n")
        for a in report.alerts:
            state = "" if a.active else f" (cleared at rollout {a.cleared_at})"
            w(f"  [{a.severity.upper()}] {a.rule} from rollout {a.rollout}{state}: {safe(a.message)}\n")
            w(f"      means: {a.meaning}; check first: {a.check}\n")
            ev = safe(json.dumps(a.evidence, default=str))
            if len(ev) > 300:
                ev = ev[:300].rsplit(" ", 1)[0] + " …"
            w(f"      evidence: {ev}\n")
    extra = ""
    if getattr(counts, "long_lines", 0):
        extra += f", {counts.long_lines} lines cut at 1 MiB"
    if getattr(counts, "dropped_metrics", 0):
        extra += f", {counts.dropped_metrics} values of metric names past the 1,024-name bound dropped"
    w(f"\n{counts.lines} lines read: {counts.records} metric records, {counts.event_lines} event lines, "
      f"{counts.noise} noise, {counts.unreadable} unreadable, {counts.cut_records} cut records{extra}\n")
