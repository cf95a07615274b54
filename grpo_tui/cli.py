"""Command line: the dashboard, and the headless `check`, `export`, `calibrate`, `simulate`, `tail`.

Every failure a user can cause (missing file, bad flags, unreadable ranges) is one clear line
on stderr and a non-zero exit, never a traceback.  `check` keeps Nagios codes: argparse's own
exit 2 is turned into 3 (UNKNOWN) so it can't be read as CRITICAL.
"""

from __future__ import annotations

import argparse
import sys

from .lines.files import InputError

SUBCOMMANDS = ("check", "export", "calibrate", "simulate", "tail")
UNKNOWN = 3


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so each command picks its own exit code."""

    def error(self, message: str):  # noqa: D401
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _add_ranges(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ranges", metavar="FILE", help="healthy ranges TOML (from `grpo-tui calibrate`)")


def build_parsers() -> dict[str, argparse.ArgumentParser]:
    ps: dict[str, argparse.ArgumentParser] = {}
    p = _Parser(prog="grpo-tui check", description="Verdict on a log: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
    p.add_argument("path")
    _add_ranges(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (design.md §6)")
    ps["check"] = p

    p = _Parser(prog="grpo-tui export", description="Every metric per rollout (or per train step) as CSV or JSON.")
    p.add_argument("path")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--axis", choices=("rollout", "step"), default="rollout")
    p.add_argument("-o", "--output", metavar="FILE")
    _add_ranges(p)
    ps["export"] = p

    p = _Parser(prog="grpo-tui calibrate", description="Your own healthy ranges from 2-3 seed runs of one config.")
    p.add_argument("paths", nargs="+")
    p.add_argument("-o", "--output", metavar="FILE.toml", required=True)
    p.add_argument("--force", action="store_true", help="write the ranges even when a seed looks broken")
    _add_ranges(p)
    ps["calibrate"] = p

    p = _Parser(prog="grpo-tui simulate", description="Write a realistic Miles log for a scenario.")
    p.add_argument("--scenario", default="healthy")
    p.add_argument("--rollouts", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=float, metavar="SECONDS", help="write live, one rollout every SECONDS")
    p.add_argument("--steps-per-rollout", type=int, default=None, help="K (default: the setup's, 1 for manual)")
    p.add_argument("--setup", default="manual", help="training setup (see --list)")
    p.add_argument("--format", dest="fmt", choices=("miles", "slime", "level"), default="miles")
    p.add_argument("-o", "--output", metavar="FILE")
    p.add_argument("--list", action="store_true", help="list scenarios")
    _add_ranges(p)
    ps["simulate"] = p

    p = _Parser(prog="grpo-tui tail", description="Follow a log headless: one JSON object per line on stdout.")
    p.add_argument("path", help="log file, or - for stdin")
    p.add_argument("--new-only", action="store_true", help="print only what arrives after start")
    p.add_argument("--replay", type=float, metavar="SPEED",
                   help="replay a finished log by its own timestamps at SPEED x (0 = max), then summarise")
    _add_ranges(p)
    ps["tail"] = p

    p = _Parser(prog="grpo-tui", description="GRPO run health dashboard. Commands: " + ", ".join(SUBCOMMANDS)
                + ". No PATH: a demo on a simulated live run.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="log file or folder (newest *.log)")
    p.add_argument("--replay", type=float, metavar="SPEED", help="play a finished log at SPEED x (0 = max)")
    p.add_argument("--theme", metavar="NAME")
    _add_ranges(p)
    ps["dashboard"] = p
    return ps


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = argv[0] if argv and argv[0] in SUBCOMMANDS else "dashboard"
    if cmd != "dashboard":
        argv = argv[1:]
    parsers = build_parsers()
    try:
        args = parsers[cmd].parse_args(argv)
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return UNKNOWN if cmd == "check" else 2
    try:
        return _run(cmd, args)
    except InputError as exc:
        print(f"grpo-tui {cmd if cmd != 'dashboard' else ''}: {exc}".replace("  ", " "), file=sys.stderr)
        return UNKNOWN if cmd == "check" else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _run(cmd: str, args: argparse.Namespace) -> int:
    if cmd == "export":
        from .commands.export_cmd import run
    elif cmd == "check":
        from .commands.check_cmd import run
    elif cmd == "calibrate":
        from .commands.calibrate_cmd import run
    elif cmd == "simulate":
        from .commands.simulate_cmd import run
    elif cmd == "tail":
        from .commands.tail_cmd import run
    else:
        from .commands.dashboard_cmd import run
    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
