"""`grpo-tui serve PATH... [--host 127.0.0.1] [--port 8765]`: the dashboard in a browser.

Each browser tab runs its own `python -m grpo_tui PATH...` (the same dashboard: keys, themes,
alerts) through textual-serve, an optional extra (`pip install 'grpo-tui[web]'`).

Safe by default: it listens on 127.0.0.1 and prints the SSH port-forward that reaches it. Any other
address must be asked for with --host; it prints a warning, and a token (random unless --token
gives one) must be in the URL. At most --max-sessions tabs run at once. The server writes no file.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import socket
import sys

from ..lines.files import InputError
from .hosts import is_loopback, url_host

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_SESSIONS = 4
TOKEN_RE = re.compile(r"[A-Za-z0-9._~-]+")
MISSING_EXTRA = "serve needs the `web` extra: pip install 'grpo-tui[web]' (from a checkout: pip install -e '.[web]')"


def dashboard_command(
    paths: list[str],
    *,
    theme: str | None = None,
    ranges: str | None = None,
    python: str | None = None,
    ended_after: float | None = None,
) -> str:
    """The shell command one browser session runs: this Python, `-m grpo_tui`, absolute paths.

    textual-serve starts it through the shell, so every word is shlex-quoted (a file name can't
    inject anything), and paths are absolute (a name starting with '-' can't become an option).
    """
    words = [python or sys.executable, "-m", "grpo_tui", *(os.path.abspath(p) for p in paths)]
    if theme:
        words += ["--theme", theme]
    if ranges:
        words += ["--ranges", os.path.abspath(ranges)]
    if ended_after is not None:
        words += ["--ended-after", f"{ended_after:g}s"]
    # the parent resolved the settings; a tab must not also post the config's notifications
    # (one message per open tab)
    words.append("--no-config")
    return " ".join(shlex.quote(w) for w in words)


def _check_args(args) -> tuple[list[str], str | None]:
    from ..judge.ranges import RangesError, load_ranges

    paths = list(args.paths)
    for p in paths:
        if not os.path.exists(p):
            raise InputError(f"{p}: no such file or folder")
        if not os.access(p, os.R_OK):
            raise InputError(f"{p}: permission denied")
    if args.ranges:
        try:
            load_ranges(args.ranges)
        except RangesError as exc:
            raise InputError(str(exc)) from None
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port {args.port}: must be 0-65535 (0 = any free port)")
    if args.max_sessions < 1:
        raise InputError(f"--max-sessions {args.max_sessions}: must be at least 1")
    token = args.token
    if token is not None and token != "" and not TOKEN_RE.fullmatch(token):
        raise InputError("--token: use letters, digits and . _ ~ - only (it goes in a URL)")
    if not is_loopback(args.host):
        if token == "":
            raise InputError(
                f"--host {args.host} reaches beyond this machine: it needs a token (leave --token out for a random one)"
            )
        if token is None:
            token = secrets.token_urlsafe(18)
    return paths, (token or None)


def run(args) -> int:
    paths, token = _check_args(args)
    try:
        import aiohttp  # noqa: F401
        import textual_serve  # noqa: F401
    except ImportError:
        raise InputError(MISSING_EXTRA) from None
    from .server import GuardedServer

    command = dashboard_command(
        paths, theme=args.theme, ranges=args.ranges, ended_after=getattr(args, "ended_after", None)
    )
    names = ", ".join(os.path.basename(os.path.normpath(p)) or p for p in paths)
    host = args.host
    local = is_loopback(host)
    if not local:
        print(
            f"grpo-tui serve: WARNING: listening on {host}, not only on this machine: anyone who can "
            "reach this port and has the URL with its token sees the log and its dashboard "
            "(plain HTTP: the token is not encrypted). The safe default is --host 127.0.0.1 "
            "with an SSH port-forward.",
            file=sys.stderr,
            flush=True,
        )

    def listening(port: int) -> None:
        q = f"?token={token}" if token else ""
        shown = url_host(host) if local or host not in ("0.0.0.0", "::", "") else socket.gethostname()
        print(
            f"grpo-tui serve: http://{shown}:{port}/{q}  (the dashboard of {names}; one dashboard per "
            f"browser tab, at most {args.max_sessions})",
            flush=True,
        )
        if local:
            print(
                f"  from your machine: ssh -L {port}:localhost:{port} {socket.gethostname()}"
                f"   then open http://localhost:{port}/{q}",
                flush=True,
            )
        print("  Ctrl+C stops the server.", flush=True)

    server = GuardedServer(
        command,
        host=host,
        port=args.port,
        token=token,
        max_sessions=args.max_sessions,
        title=f"grpo-tui · {names}",
        out=listening,
    )
    try:
        server.serve()
    except OSError as exc:
        raise InputError(
            f"can't listen on {url_host(host)}:{args.port}: {exc.strerror or exc}"
            + (" (pick another --port)" if exc.errno in (98, 48) else "")
        ) from None
    return 0
