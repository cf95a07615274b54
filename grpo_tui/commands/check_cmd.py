"""`grpo-tui check PATH [PATH ...] [--ranges FILE] [--baseline SEED ...] [--json]`: a verdict with
Nagios exit codes. One file: the run's full report (docs/contracts.md §6.2-§6.3). Several paths or a folder:
one line per run (JSON `{"runs": [...]}`), exit code = the worst status."""

from __future__ import annotations

import json
import sys

from ..judge.engine import AlertGroup
from ..judge.ranges import RangesError, load_ranges
from ..judge.signals import BY_ID
from ..lines.files import InputError
from ..output import fmt_age, safe_text
from ..pipeline import judge_path, named_inputs, one_run
from ..process import spare
from ..runs import RANK, alert_words, discover, judge_many, top_alert, unknown_json, worst

EXIT = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}
BADGE = {"ok": "✓ ok", "warning": "! warning", "critical": "✗ critical", "unknown": "? n/a"}
safe = safe_text  # log text for a terminal: control characters and bidi overrides neutralised


def _fmt(sig_id: str, v) -> str:
    if v is None:
        return "-"
    try:
        return BY_ID[sig_id].fmt.format(v)
    except (ValueError, TypeError):
        return str(v)


def run(args) -> int:
    paths = list(args.paths)
    single = len(paths) == 1 and one_run(paths[0])
    try:
        ranges = load_ranges(args.ranges)
        label = args.ranges or "defaults"
        if getattr(args, "baseline", None):
            from ..runs import load_baseline

            ranges, label = load_baseline(args.baseline, ranges if args.ranges else None).ranges, "baseline"
    except (RangesError, InputError) as exc:
        return _unknown(args, str(exc), None if single else discover(paths, args.recursive))
    if not single:
        return _run_many(args, discover(paths, args.recursive), ranges, label)
    path = paths[0]
    try:
        pipe = judge_path(path, ranges, ranges_label=label)
    except InputError as exc:
        return _unknown(args, str(exc))
    spare(pipe)
    report = pipe.report()
    every = getattr(args, "all", False)
    if args.json:
        print(json.dumps(report.to_json(path, every), allow_nan=False, default=str))
    else:
        _print_human(path, report, pipe.parser.counts, every, named_inputs(pipe, path))
        if pipe.input is not None:
            recs = sum(seg.records for seg in pipe.store.segments)
            skipped = ", ".join(f"{n} {what}" for what, n in sorted(pipe.input_problems.items())) or "nothing"
            print(f"\n{recs} metric records read from {pipe.input_files} {pipe.input.label} files; skipped: {skipped}")
    _notify(args, [(path, report)])
    return EXIT[report.status]


def _notify(args, runs: list) -> None:
    """--notify URL: post what is new since the last check of these files (notify/memory.py).
    The verdict and the exit code stay as they are; a failed delivery is one line on stderr."""
    targets = getattr(args, "notify_targets", None)
    if not targets:
        return
    sys.stdout.flush()  # (the verdict first, whatever the delivery takes)
    from ..notify.memory import tell_news

    for line in tell_news(runs, targets, args.notify_on):
        print(f"grpo-tui check: {safe(line)}", file=sys.stderr)


def _unknown(args, message: str, many: list[str] | None = None) -> int:
    print(f"grpo-tui check: {safe(message)}", file=sys.stderr)
    if getattr(args, "json", False):
        if many is None:
            print(json.dumps(unknown_json(args.paths[0], message)))
        else:
            print(json.dumps({"runs": [unknown_json(p, message) for p in many]}))
    return EXIT["unknown"]


def _run_many(args, paths: list[str], ranges, label: str) -> int:
    if not paths:
        where = ", ".join(args.paths)
        return _unknown(
            args, f"{where}: no *.log or *.jsonl files" + ("" if args.recursive else " (-r: look in subfolders)"), []
        )
    results = judge_many(paths, ranges, ranges_label=label)
    status = worst(r.status for r in results)
    if args.json:
        print(json.dumps({"runs": [r.to_json() for r in results]}, allow_nan=False, default=str))
    else:
        _print_many(results, status)
    _notify(args, [(r.path, r.report) for r in results])
    return EXIT[status]


def _middle_cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: keep - keep // 2] + "…" + text[len(text) - keep // 2 :]


def _print_many(results, status: str) -> None:
    """One line per run: status, run, state, rollouts, last data, and its top alert."""
    w = sys.stdout.write
    name_w = min(40, max([3] + [len(safe(r.path)) for r in results]))
    w(f"{'status':<10}  {'run':<{name_w}}  {'state':<16} {'rollouts':>8}  {'last data':>10}  top alert\n")
    for r in results:
        name = _middle_cut(safe(r.path), name_w)
        if r.report is None:
            w(f"{BADGE['unknown']:<10}  {name:<{name_w}}  {'-':<16} {0:>8}  {'-':>10}  {safe(r.error)}\n")
            continue
        rep = r.report
        st = rep.run_state
        age = "-" if st.data_age is None else fmt_age(st.data_age) + " ago"
        top = top_alert(rep.alerts)
        words = safe(alert_words(top)) if top else "-"
        more = len(rep.groups) - 1
        if top and more > 0:
            words += f" (+{more} more)"
        w(f"{BADGE[rep.status]:<10}  {name:<{name_w}}  {st.label:<16} {rep.rollouts:>8}  {age:>10}  {words}\n")
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = ", ".join(f"{counts[s]} {s}" for s in sorted(counts, key=lambda s: -RANK.get(s, 1)))
    w(f"\n{len(results)} runs: {parts}; worst {status.upper()} (exit {EXIT[status]})\n")


def state_text(st) -> str:
    """`finished (Job '...' succeeded), last data 2.0 d ago` — the run's state in words."""
    if st.name == "ended" and st.note:
        return f"ended: {st.note}"
    out = st.label
    if st.name == "finished" and st.finished_by:
        out += f" ({safe(st.finished_by)[:80]})"
    if st.data_age is not None:
        out += f", last metric {fmt_age(st.data_age)} ago"
    elif st.line_age is not None:
        out += f", last line {fmt_age(st.line_age)} ago"
    return out


def _print_human(path: str, report, counts, every: bool = False, named: list | None = None) -> None:
    w = sys.stdout.write
    w(
        f"{safe(path)}: {report.status.upper()}  ({report.rollouts} rollout{'' if report.rollouts == 1 else 's'}, "
        f"last {report.last_rollout}, "
        f"{report.steps_per_rollout} step(s)/rollout"
        + (f", {report.segments} run segments (latest judged)" if report.segments > 1 else "")
        + ")\n"
    )
    w(f"state: {state_text(report.run_state)}; ranges: {safe(report.ranges)}\n")
    if report.input_note():
        w(f"{report.input_note()}\n")
    for kind, folder, found in named or ():
        label = "TensorBoard" if kind == "tensorboard" else "W&B"
        how = f"`grpo-tui check {folder}` reads it" if found else "not found from here"
        w(f"the log writes {label} to {safe(folder)} ({how})\n")
    if report.ranges_note:
        w(f"no range judges this run (trend and event rules only): {safe(report.ranges_note)}\n")
    w(f"{'signal':<16} {'last':>10} {'mean5':>10} {'range':>21}  status\n")
    for sid, s in report.signals.items():
        rng = f"{_fmt(sid, s.range[0])}-{_fmt(sid, s.range[1])}" if s.range else "-"
        w(f"{s.label:<16} {_fmt(sid, s.last):>10} {_fmt(sid, s.mean5):>10} {rng:>21}  {BADGE[s.status]}\n")
    groups = report.groups
    if report.alerts:
        folded = (
            "" if every or len(groups) == len(report.alerts) else f"; {len(report.alerts)} in all, --all lists each"
        )
        w(f"\nalerts (criticals first, newest first{folded}):\n")
        for g in [AlertGroup([a]) for a in report.alerts] if every else groups:
            a = g.latest
            if g.count > 1:
                on = f" ({BY_ID[a.signal].label})" if a.signal in BY_ID else ""
                head = f"{a.rule}{on} {g.words()}"
            else:
                head = f"{a.rule} from rollout {a.rollout}" + (
                    "" if a.active else f" (cleared at rollout {a.cleared_at})"
                )
            w(f"  [{a.severity.upper()}] {head}: {safe(a.message)}\n")
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
    if report.input is not None:
        return  # (no lines: the caller says what the files held)
    w(
        f"\n{counts.lines} lines read: {counts.records} metric records, {counts.event_lines} event lines, "
        f"{counts.noise} noise, {counts.unreadable} unreadable, {counts.cut_records} cut records{extra}\n"
    )
