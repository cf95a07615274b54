"""Command line: the dashboard, and the headless `check`, `export`, `calibrate`, `simulate`, `tail`.

Every failure a user can cause (missing file, bad flags, unreadable ranges) is one clear line
on stderr and a non-zero exit, never a traceback.  `check` keeps Nagios codes: argparse's own
exit 2 is turned into 3 (UNKNOWN) so it can't be read as CRITICAL.
"""

from __future__ import annotations

import argparse
import errno
import io
import os
import sys
from typing import NoReturn

# numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins before it
# sleeps (a large share of `python -c "import numpy"`'s CPU); our numpy work is elementwise,
# never BLAS, and on a 2-core machine that spin took a core from the reader thread.  Before any
# import of numpy; a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .lines.files import InputError
from .output import safe_text
from .process import leave, one_shot

SUBCOMMANDS = ("check", "export", "calibrate", "simulate", "tail", "serve", "notify", "config")
# commands that take settings from the config file and GRPO_TUI_* (config.py)
CONFIGURED = ("dashboard", "check", "tail", "serve", "notify")  # (`config` reads them itself)
UNKNOWN = 3


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so each command picks its own exit code."""

    def error(self, message: str):
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _add_ranges(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ranges", metavar="FILE", help="healthy ranges TOML (from `grpo-tui calibrate`)")
    # main() takes --debug out of argv before parsing; listed here so --help shows it.
    p.add_argument("--debug", action="store_true", help="on an internal error, print the traceback")


def _age(value: str) -> float:
    """`--ended-after`: a duration with its unit (90m, 12h, 2d), in seconds (config.parse_age)."""
    from .config import parse_age

    try:
        return parse_age(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_horizon(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ended-after",
        metavar="AGE",
        type=_age,
        help="a log silent this long with no finish line is a run that ended, judged as at its "
        "last line, not stalled (default 24h; e.g. 90m, 12h, 3d)",
    )


def _add_force(p: argparse.ArgumentParser, why: str | None) -> None:
    """`why`: what --force allows; None: accepted and ignored (it once allowed -o in the log's
    folder, which is allowed now; scripts that pass it keep working)."""
    p.add_argument("--force", action="store_true", help=why or argparse.SUPPRESS)


def _file_or_stdout(value: str) -> str | None:
    """`-o -` is standard output, as for most Unix tools (not a file named "-")."""
    return None if value == "-" else value


def _add_baseline(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline",
        nargs="+",
        metavar="SEED",
        help="judge against the envelope of 2-3 seed runs of the same setup (what calibrate writes)",
    )


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="grpo-tui check",
        description="Verdict on a log: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. "
        "Several logs or a folder: one line per run, exit = the worst status.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="log file(s) or folder(s) (their *.log and *.jsonl)")
    p.add_argument("-r", "--recursive", action="store_true", help="folders: also the *.log and *.jsonl of subfolders")
    _add_ranges(p)
    _add_baseline(p)
    _add_horizon(p)
    p.add_argument("--all", action="store_true", help="list every alert raised, not each sign once with its count")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/contracts.md §6.3)")
    _add_webhooks(p)
    _add_config(p)
    return p


def _export_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="grpo-tui export",
        description="Every metric per rollout (or per train step) as CSV or JSON. "
        "Several logs or a folder: one table, a `run` column first.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("-r", "--recursive", action="store_true", help="folders: also the *.log and *.jsonl of subfolders")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--axis", choices=("rollout", "step"), default="rollout")
    p.add_argument("-o", "--output", metavar="FILE", type=_file_or_stdout, help="default or -: standard output")
    _add_force(p, None)
    _add_ranges(p)
    return p


def _calibrate_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="grpo-tui calibrate", description="Your own healthy ranges from 2-3 seed runs of one config.")
    p.add_argument("paths", nargs="+")
    p.add_argument("-o", "--output", metavar="FILE.toml", required=True)
    _add_force(p, "write the ranges even when a seed shows a broken-run sign")
    _add_ranges(p)
    return p


def _simulate_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="grpo-tui simulate", description="Write a realistic Miles log for a scenario.")
    p.add_argument("--scenario", default="healthy")
    p.add_argument("--rollouts", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=float, metavar="SECONDS", help="write live, one rollout every SECONDS")
    p.add_argument("--steps-per-rollout", type=int, default=None, help="K (default: the setup's, 1 for manual)")
    p.add_argument("--setup", default="manual", help="training setup (see --list)")
    p.add_argument("--format", dest="fmt", choices=("miles", "slime", "level"), default="miles")
    p.add_argument("-o", "--output", metavar="FILE", type=_file_or_stdout, help="default or -: standard output")
    p.add_argument("--list", action="store_true", help="list scenarios")
    _add_ranges(p)
    return p


def _tail_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="grpo-tui tail", description="Follow a log headless: one JSON object per line on stdout.")
    p.add_argument("path", help="log file, or - for stdin")
    p.add_argument("--new-only", action="store_true", help="print only what arrives after start")
    p.add_argument(
        "--replay",
        type=float,
        metavar="SPEED",
        help="replay a finished log by its own timestamps at SPEED x (0 = max), then summarise",
    )
    _add_ranges(p)
    _add_horizon(p)
    _add_notify(p, bell=False)
    _add_config(p)
    return p


def _serve_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="grpo-tui serve", description="The dashboard in a browser (extra `web`): one per tab.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="log file or folder (newest *.log)")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1: reach it by SSH port-forward)")
    p.add_argument("--port", type=int, help="port (default 8765; 0 = any free port)")
    p.add_argument("--token", help="secret the URL must carry (random by default when --host is not local)")
    p.add_argument("--max-sessions", type=int, default=4, metavar="N", help="browser tabs at once (default 4)")
    p.add_argument("--theme", metavar="NAME")
    _add_ranges(p)
    _add_horizon(p)
    _add_config(p)
    return p


def _dashboard_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="grpo-tui",
        description="GRPO run health dashboard. Commands: "
        + ", ".join(SUBCOMMANDS)
        + ". No PATH: a demo on a simulated live run.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="log file (its dashboard), or folder(s) / several files (the runs overview)",
    )
    p.add_argument("-r", "--recursive", action="store_true", help="folders: also the *.log and *.jsonl of subfolders")
    p.add_argument("--replay", type=float, metavar="SPEED", help="play a finished log at SPEED x (0 = max)")
    p.add_argument("--theme", metavar="NAME")
    _add_ranges(p)
    _add_baseline(p)
    _add_horizon(p)
    _add_notify(p, bell=True)
    _add_config(p)
    return p


def _notify_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="grpo-tui notify",
        description="Send a test message to each URL (or to the configured targets) and print the HTTP answer: "
        "exit 0 when every one answered 2xx, else 1.",
    )
    p.add_argument("--test", action="store_true", required=True, help="send a test message")
    p.add_argument("notify", nargs="*", metavar="URL", type=_url, help="webhook URL(s); none: the configured ones")
    p.add_argument("--notify-format", type=_format, metavar="FORMAT", help="slack, discord, ntfy or json")
    _add_config(p)
    return p


def _config_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="grpo-tui config",
        description="Print the effective settings and where each came from (default, the config file, "
        "an environment variable); --init writes a commented starter file.",
    )
    p.add_argument("--init", action="store_true", help="write a commented starter config file")
    p.add_argument("--force", action="store_true", help="--init: replace an existing file")
    _add_config(p)
    return p


_PARSERS = {
    "check": _check_parser,
    "export": _export_parser,
    "calibrate": _calibrate_parser,
    "simulate": _simulate_parser,
    "tail": _tail_parser,
    "serve": _serve_parser,
    "dashboard": _dashboard_parser,
    "notify": _notify_parser,
    "config": _config_parser,
}


def build_parser(cmd: str) -> argparse.ArgumentParser:
    """The parser of one command.  Why one: building all seven slowed every command's start."""
    return _PARSERS[cmd]()


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("grpo-tui")
    except Exception:
        return "0.1.0"


THEME_ALIASES = ("dark", "light", "high-contrast", "hc", "ascii")


def known_themes() -> list[str]:
    """Theme names --theme takes: the aliases, grpo-* names, and any themes/*.toml palette."""
    import tomllib
    from pathlib import Path

    names = list(THEME_ALIASES) + [f"grpo-{a}" for a in ("dark", "light", "high-contrast", "ascii")]
    folder = Path(__file__).resolve().parents[1] / "themes"
    for f in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            names.append(str(tomllib.loads(f.read_text(encoding="utf-8")).get("name", f.stem)))
        except (OSError, ValueError):
            continue
        names.append(f.stem)
    return list(dict.fromkeys(names))


def _wrong_words(cmd: str, args) -> str | None:
    """A misspelt command (`grpo-tui chek x.log`) or an unknown theme: an error, not a
    dashboard waiting for a file named `chek` or a toast."""
    import difflib

    theme = getattr(args, "theme", None)
    if theme is not None and theme not in known_themes():
        return (
            f"unknown theme {theme!r} (themes: {', '.join(THEME_ALIASES[:2] + THEME_ALIASES[2:3] + THEME_ALIASES[4:])})"
        )
    if cmd != "dashboard":
        return None
    for p in getattr(args, "paths", None) or []:
        if os.path.exists(p) or os.sep in p or "." in p:
            continue
        near = difflib.get_close_matches(p, SUBCOMMANDS, 1, 0.5)
        hint = f"; did you mean `grpo-tui {near[0]}`?" if near else ""
        return (
            f"{p!r} is not a command nor an existing file (commands: {', '.join(SUBCOMMANDS)}){hint} "
            f"To wait for a log that does not exist yet, give its path, e.g. ./{p}"
        )
    return None


def _url(value: str) -> str:
    """A webhook URL (config.flag_url); the error never repeats the URL's secret part."""
    from .config import flag_url
    from .notify.targets import TargetError

    try:
        return flag_url(value)
    except TargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _format(value: str) -> str:
    from .config import flag_format
    from .notify.targets import TargetError

    try:
        return flag_format(value)
    except TargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _events(value: str) -> frozenset[str]:
    from .notify.targets import TargetError, parse_on

    try:
        return parse_on(value)
    except TargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_webhooks(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--notify",
        action="append",
        metavar="URL",
        type=_url,
        help="post alerts to this webhook (Slack, Discord, ntfy or JSON; repeatable)",
    )
    p.add_argument(
        "--notify-format", type=_format, metavar="FORMAT", help="slack, discord, ntfy or json (default: from the URL)"
    )
    p.add_argument(
        "--notify-on",
        action="append",
        type=_events,
        metavar="EVENTS",
        help="critical, warning, finished, quiet, cleared or all; repeatable or comma-separated (default: critical)",
    )


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="settings file (default $XDG_CONFIG_HOME/grpo-tui/config.toml)")
    p.add_argument(
        "--no-config", action="store_true", help="ignore the config file and the GRPO_TUI_* environment variables"
    )


def _add_notify(p: argparse.ArgumentParser, bell: bool) -> None:
    p.add_argument(
        "--on-critical", metavar="CMD", help="run CMD for each new critical alert, the alert as JSON on its stdin"
    )
    _add_webhooks(p)
    if bell:
        p.add_argument(
            "--no-notify", action="store_true", help="no terminal bell / desktop notification on a new critical alert"
        )


def _command(argv: list[str]) -> tuple[list[str], bool, str]:
    """(argv without --debug, whether --debug was given before `--`, the command it runs)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:cut]
    if debug:
        argv = [a for a in argv[:cut] if a != "--debug"] + argv[cut:]
    return argv, debug, argv[0] if argv and argv[0] in SUBCOMMANDS else "dashboard"


def entry() -> NoReturn:
    """The console script and `python -m grpo_tui`: main(), then leave()."""
    argv = sys.argv[1:]
    cmd = _command(list(argv))[2]
    one_shot(cmd)
    leave(main(argv), cmd)


def main(argv: list[str] | None = None) -> int:
    """Run one command; whatever happens, at most one line on stderr and a documented exit code.

    Exit codes (README, Commands): `check` 0/1/2/3 by Nagios, 3 for any failure; other
    commands 0 done, 1 failed (bad input, cannot write, internal error), 2 bad arguments;
    130 after Ctrl-C.  `--debug` (anywhere before `--`) adds the traceback of an internal error.
    """
    argv, debug, cmd = _command(list(sys.argv[1:] if argv is None else argv))
    if argv[:1] in (["--version"], ["-V"]):
        print(f"grpo-tui {_version()}")
        return 0
    if cmd != "dashboard":
        argv = argv[1:]
    fail = UNKNOWN if cmd == "check" else 1
    prog = "grpo-tui" if cmd == "dashboard" else f"grpo-tui {cmd}"
    try:
        try:
            args = build_parser(cmd).parse_args(argv)
        except _UsageError as exc:
            _say(str(exc))
            return UNKNOWN if cmd == "check" else 2
        if cmd in CONFIGURED:
            from .config import ConfigError, apply

            try:
                apply(cmd, args)
            except ConfigError as exc:
                _say(f"{prog}: {exc}")
                return UNKNOWN if cmd == "check" else 2
        wrong = _wrong_words(cmd, args)
        if wrong:
            _say(f"{prog}: {wrong}")
            return 2
        ahead = _read_ahead(cmd, args)
        try:
            code = _run(cmd, args)
        finally:
            if ahead:  # a read ahead the command never took (bad --ranges, -o refused...)
                from .lines import prefetch

                prefetch.cancel()
        sys.stdout.flush()  # a full disk or a closed pipe must fail here, inside the guard
        return code
    except InputError as exc:
        _say(f"{prog}: {exc}")
        return fail
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if not _stdout_failed(exc):
            return _internal(prog, exc, debug, fail)
        try:
            sys.stdout.flush()  # still fails: stdout is the broken stream, so stop using it
        except (OSError, ValueError):
            _silence_stdout()
        if exc.errno != errno.EPIPE:
            _say(f"{prog}: cannot write output: {exc.strerror or exc}")
        return fail
    except Exception as exc:
        return _internal(prog, exc, debug, fail)


# errno values meaning "the output can't take more": a closed pipe, a full disk, a broken device
_WRITE_ERRNOS = {errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _stdout_failed(exc: OSError) -> bool:
    """Our own files report their errors as InputError, so an OSError of this kind is stdout."""
    return isinstance(exc, BrokenPipeError) or exc.errno in _WRITE_ERRNOS


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null (the Python docs' recipe for SIGPIPE), so the flush at exit
    can't fail again and print "Exception ignored ..." after our one line."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def _say(line: str) -> None:
    """One sanitised line on stderr; a stderr that can't be written is ignored, not raised."""
    try:
        print(safe_text(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _internal(prog: str, exc: BaseException, debug: bool, code: int) -> int:
    if debug:
        import traceback  # (only here: every command's start would pay for it)

        traceback.print_exception(exc)
    msg = " ".join(str(exc).split())[:300]
    _say(f"{prog}: internal error: {type(exc).__name__}: {msg} (run with --debug for the traceback)")
    return code


def _read_ahead(cmd: str, args: argparse.Namespace) -> bool:
    """`check` or `export` of one file: its reader starts now, while the command's modules are
    imported (lines/prefetch.py); judge_path takes it over.  True when one was started."""
    paths = getattr(args, "paths", None)
    if cmd in ("check", "export") and paths and len(paths) == 1 and not os.path.isdir(paths[0]):
        from .lines import prefetch
        from .lines.files import BULK_CHUNK

        return bool(prefetch.start(paths[0], BULK_CHUNK, untimed=cmd == "export"))  # (as export_cmd reads it)
    return False


def _run(cmd: str, args: argparse.Namespace) -> int:
    if getattr(args, "ended_after", None) is not None:
        from . import pipeline

        before = pipeline.ended_after()
        pipeline.set_ended_after(args.ended_after)
        try:
            return _run_command(cmd, args)
        finally:
            pipeline.set_ended_after(before)  # (main() called again in one process: tests)
    return _run_command(cmd, args)


def _run_command(cmd: str, args: argparse.Namespace) -> int:
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
    elif cmd == "serve":
        from .web.serve import run
    elif cmd == "notify":
        from .commands.notify_cmd import run
    elif cmd == "config":
        from .commands.config_cmd import run
    else:
        from .ui.launch import run
    return run(args)


if __name__ == "__main__":  # pragma: no cover
    entry()
