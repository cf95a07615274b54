"""Settings that stick: `$XDG_CONFIG_HOME/grpo-tui/config.toml` (or `--config FILE`), then the
GRPO_TUI_* environment variables, then the flags, each overriding the one before.

Read by cli.py before a command runs and handed down as the command's arguments, so a
command never knows where a value came from; `grpo-tui config` shows that.  The file is
checked as strictly as a ranges file (tomlfile.py): an unknown key or a wrong type is
`FILE:LINE: reason`, never a silently ignored typo.  Stdlib only, no Textual."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .notify.targets import (
    DEFAULT_ON,
    EVENTS,
    FORMATS,
    Target,
    TargetError,
    check_url,
    guess_format,
    parse_on,
    split_urls,
)
from .output import safe_text, xdg_dir
from .tomlfile import key_line, kind_of, read_toml, where

MAX_DEPTH = 4  # document > [notify] > urls > {url, format}


class ConfigError(Exception):
    """Shown as is: `FILE:LINE: reason`, or `GRPO_TUI_X: reason` for an environment variable."""


@dataclass(frozen=True)
class Key:
    name: str  # as `grpo-tui config` lists it
    dest: str  # the argparse destination it fills
    flag: str
    env: str | None
    default: Any
    commands: frozenset[str]
    table: str | None = None  # where it lives in the file
    file_key: str = ""


_VIEW = frozenset({"dashboard", "serve"})
_JUDGE = frozenset({"dashboard", "check", "tail", "serve"})
_NOTIFY = frozenset({"dashboard", "check", "tail", "notify"})
KEYS = (
    Key("theme", "theme", "--theme", "GRPO_TUI_THEME", None, _VIEW, None, "theme"),
    Key("ranges", "ranges", "--ranges", None, None, _JUDGE, None, "ranges"),
    Key("baseline", "baseline", "--baseline", None, None, frozenset({"dashboard", "check"}), None, "baseline"),
    Key(
        "on_critical", "on_critical", "--on-critical", None, None, frozenset({"dashboard", "tail"}), None, "on_critical"
    ),
    Key("ended_after", "ended_after", "--ended-after", None, None, _JUDGE, None, "ended_after"),
    Key("notify", "notify", "--notify", "GRPO_TUI_NOTIFY", (), _NOTIFY, "notify", "urls"),
    Key(
        "notify_format", "notify_format", "--notify-format", "GRPO_TUI_NOTIFY_FORMAT", None, _NOTIFY, "notify", "format"
    ),
    Key("notify_on", "notify_on", "--notify-on", "GRPO_TUI_NOTIFY_ON", DEFAULT_ON, _NOTIFY, "notify", "on"),
    Key("serve_host", "host", "--host", None, "127.0.0.1", frozenset({"serve"}), "serve", "host"),
    Key("serve_port", "port", "--port", None, 8765, frozenset({"serve"}), "serve", "port"),
)
BY_NAME = {k.name: k for k in KEYS}
TOP_KEYS = {k.file_key for k in KEYS if k.table is None}
TABLES = {"notify": {"urls", "format", "on"}, "serve": {"host", "port"}}

_AGE_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_age(value: str) -> float:
    """A duration with its unit (90m, 12h, 2d) in seconds, more than the 2 minutes a line
    counts as live (so a run can still be live, quiet and stalled before it ends); ValueError."""
    text = value.strip().lower()
    num = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(num) :]
    try:
        seconds = float(num) * _AGE_UNITS[unit]
    except (ValueError, KeyError):
        raise ValueError(f"{value!r}: give a duration with its unit, e.g. 90m, 12h, 2d") from None
    if not seconds > 120.0 or seconds == float("inf"):
        raise ValueError(f"{value!r}: must be more than 2 min (a line that recent means live)")
    return seconds


def default_path(environ=None) -> str:
    return os.path.join(xdg_dir("XDG_CONFIG_HOME", ".config", environ), "config.toml")


@dataclass
class Setting:
    value: Any
    source: str = "default"  # default | FILE:LINE | env NAME | flag --x
    shown: str | None = None  # the value as written (ended_after's "12h")


@dataclass
class Settings:
    path: str
    found: bool
    values: dict[str, Setting] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    targets_source: str = "default"

    def __getitem__(self, name: str) -> Any:
        return self.values[name].value


# ------------------------------------------------------------------------------ the file


def _file_values(path: str) -> dict[str, Setting]:
    """Every key the file sets, checked; ConfigError `FILE:LINE: reason` on the first fault."""
    doc, lines = read_toml(path, "config file", ConfigError, MAX_DEPTH)
    name = safe_text(path)
    folder = os.path.dirname(os.path.abspath(path))
    out: dict[str, Setting] = {}

    def fail(table: str | None, key: str | None, reason: str) -> ConfigError:
        return ConfigError(f"{where(name, key_line(lines, table, key))}: {reason}")

    def at(table: str | None, key: str) -> str:
        return where(name, key_line(lines, table, key))

    for key, value in doc.items():
        if key in TABLES:
            if not isinstance(value, dict):
                raise fail(None, key, f"`{key}` must be a table ([{key}])")
            for sub in value:
                if sub not in TABLES[key]:
                    raise fail(
                        key, sub, f"unknown key `{safe_text(sub)}` in [{key}] (known: {', '.join(sorted(TABLES[key]))})"
                    )
        elif key not in TOP_KEYS:
            known = ", ".join(sorted(TOP_KEYS | {f"[{t}]" for t in TABLES}))
            raise fail(None, key, f"unknown key `{safe_text(key)}` (known: {known})")

    def text(table: str | None, key: str, v: Any) -> str:
        if not isinstance(v, str) or not v.strip():
            raise fail(table, key, f"`{key}` must be a non-empty string, not {kind_of(v)}")
        return v

    def a_path(v: str) -> str:
        return os.path.join(folder, os.path.expanduser(v))  # (relative to the config file)

    for k in KEYS:
        src = doc.get(k.table, {}) if k.table else doc
        if k.file_key not in src:
            continue
        v = src[k.file_key]
        loc = at(k.table, k.file_key)
        if k.name in ("theme", "on_critical"):
            out[k.name] = Setting(text(k.table, k.file_key, v), loc)
        elif k.name == "ranges":
            out[k.name] = Setting(a_path(text(k.table, k.file_key, v)), loc, v)
        elif k.name == "baseline":
            if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
                raise fail(k.table, k.file_key, "`baseline` must be a list of seed log paths (2-3)")
            out[k.name] = Setting([a_path(x) for x in v], loc, ", ".join(v))
        elif k.name == "ended_after":
            try:
                out[k.name] = Setting(parse_age(text(k.table, k.file_key, v)), loc, v)
            except ValueError as exc:
                raise fail(k.table, k.file_key, f"`ended_after` {exc}") from None
        elif k.name == "notify":
            out[k.name] = Setting(_file_targets(v, fail), loc)
        elif k.name == "notify_format":
            if v not in FORMATS:
                raise fail(k.table, k.file_key, f"`format` must be one of {', '.join(FORMATS)}, not {safe_text(v)!r}")
            out[k.name] = Setting(v, loc)
        elif k.name == "notify_on":
            if not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))):
                raise fail(k.table, k.file_key, f"`on` must be a list of events ({', '.join(EVENTS)}, all)")
            try:
                out[k.name] = Setting(parse_on(v), loc)
            except TargetError as exc:
                raise fail(k.table, k.file_key, f"`on`: {exc}") from None
        elif k.name == "serve_host":
            out[k.name] = Setting(text(k.table, k.file_key, v), loc)
        elif k.name == "serve_port":
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 65535:
                raise fail(k.table, k.file_key, f"`port` must be an integer 0-65535, not {safe_text(v)}")
            out[k.name] = Setting(v, loc)
    return out


def _file_targets(v: Any, fail) -> list[tuple[str, str | None]]:
    """[notify] urls: strings, or tables {url = "...", format = "ntfy"}."""
    if not isinstance(v, list):
        raise fail("notify", "urls", f"`urls` must be a list of URLs, not {kind_of(v)}")
    out: list[tuple[str, str | None]] = []
    for i, item in enumerate(v, 1):
        fmt = None
        if isinstance(item, dict):
            extra = set(item) - {"url", "format"}
            if extra:
                raise fail(
                    "notify", "urls", f"urls[{i}]: unknown key `{safe_text(sorted(extra)[0])}` (known: url, format)"
                )
            fmt = item.get("format")
            if fmt is not None and fmt not in FORMATS:
                raise fail("notify", "urls", f"urls[{i}]: `format` must be one of {', '.join(FORMATS)}")
            item = item.get("url")
        if not isinstance(item, str):
            raise fail("notify", "urls", f"urls[{i}] must be a URL string or {{url = ..., format = ...}}")
        try:
            out.append((check_url(item), fmt))
        except TargetError as exc:
            raise fail("notify", "urls", f"urls[{i}]: {exc}") from None
    return out


# ---------------------------------------------------------------------------- resolving


def _env_values(environ) -> dict[str, Setting]:
    out: dict[str, Setting] = {}
    for k in KEYS:
        raw = (environ.get(k.env) or "").strip() if k.env else ""
        if not raw:
            continue
        src = f"env {k.env}"
        try:
            if k.name == "notify":
                out[k.name] = Setting([(check_url(u), None) for u in split_urls(raw)], src)
            elif k.name == "notify_format":
                if raw not in FORMATS:
                    raise TargetError(f"must be one of {', '.join(FORMATS)}, not {safe_text(raw)[:20]!r}")
                out[k.name] = Setting(raw, src)
            elif k.name == "notify_on":
                out[k.name] = Setting(parse_on(raw), src)
            else:
                out[k.name] = Setting(raw, src)
        except TargetError as exc:
            raise ConfigError(f"{k.env}: {exc}") from None
    return out


def _flag_values(args, cmd: str) -> dict[str, Setting]:
    out: dict[str, Setting] = {}
    for k in KEYS:
        v = getattr(args, k.dest, None)
        if v is None or v == [] or (cmd == "serve" and k.name in ("notify", "notify_format", "notify_on")):
            continue
        if k.name == "notify":
            v = [(u, None) for u in v]
        elif k.name == "notify_on":
            v = frozenset().union(*v) if isinstance(v, list) else v
        out[k.name] = Setting(v, f"flag {k.flag}")
    return out


def resolve(cmd: str, args, environ=None) -> Settings:
    """The effective settings of `cmd`: defaults < the config file < GRPO_TUI_* < flags.

    `--config FILE` must exist; the default file may be missing.  `--no-config` (serve's
    browser tabs) reads neither the file nor the environment."""
    environ = os.environ if environ is None else environ
    explicit = getattr(args, "config", None)
    path = explicit or default_path(environ)
    bare = getattr(args, "no_config", False)
    found = not bare and (explicit is not None or os.path.exists(path))
    out = Settings(path, found)
    for k in KEYS:
        out.values[k.name] = Setting(k.default)
    if found:
        out.values.update(_file_values(path))
    if not bare:
        out.values.update(_env_values(environ))
    out.values.update(_flag_values(args, cmd))
    fmt = out["notify_format"]
    out.targets = [Target(url, f or fmt or guess_format(url)) for url, f in out["notify"]]
    out.targets_source = out.values["notify"].source
    return out


def apply(cmd: str, args, environ=None) -> Settings:
    """resolve(), then the effective values set on `args` (those `cmd` takes), plus
    `notify_targets` and `notify_on` as the commands use them."""
    s = resolve(cmd, args, environ)
    for k in KEYS:
        if cmd in k.commands and k.name not in ("notify", "notify_format", "notify_on"):
            setattr(args, k.dest, s[k.name])
    if cmd in BY_NAME["notify"].commands:
        args.notify_targets = s.targets
        args.notify_on = s["notify_on"]
    return s


def flag_url(value: str) -> str:
    """--notify URL: an http(s) URL (argparse type; the message never shows the secret)."""
    check_url(value)
    return value.strip()


def flag_format(value: str) -> str:
    if value not in FORMATS:
        raise TargetError(f"{safe_text(value)[:20]!r}: one of {', '.join(FORMATS)}")
    return value


# ---------------------------------------------------------------------- showing, starting


def _shown(name: str, st: Setting, s: Settings) -> str:
    v = st.value
    if name == "notify":
        return ", ".join(f"{t.shown} ({t.format})" for t in s.targets) or "(none)"
    if name == "notify_on":
        return ",".join(e for e in EVENTS if e in v)
    if name == "ended_after" and v is None:
        return "24h"
    if st.shown is not None:
        return str(st.shown)
    if v is None:
        return "(none)"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return str(v)


def describe(s: Settings) -> str:
    """`grpo-tui config`: every setting, its value (URLs redacted) and where it came from."""
    head = f"config file: {safe_text(s.path)}" + ("" if s.found else " (none: defaults)")
    rows = [(k.name, safe_text(_shown(k.name, s.values[k.name], s)), s.values[k.name].source) for k in KEYS]
    w = max(len(v) for _, v, _ in rows)
    w = min(max(w, 10), 60)
    body = [f"{name:<14} {value:<{w}}  {src}" for name, value, src in rows]
    return "\n".join([head, *body]) + "\n"


STARTER = """\
# grpo-tui settings (README: Notifications; docs/contracts.md §8).
# Environment variables override this file (GRPO_TUI_NOTIFY, GRPO_TUI_NOTIFY_FORMAT,
# GRPO_TUI_NOTIFY_ON, GRPO_TUI_THEME) and flags override both; `grpo-tui config` shows what
# is in effect and where each value came from.  Every key is optional; an unknown key is an error.

# theme = "dark"                     # dark | light | high-contrast | ascii
# ranges = "ranges.toml"             # healthy ranges from `grpo-tui calibrate` (relative to this file)
# baseline = ["seed1.log", "seed2.log"]   # or judge against 2-3 seed runs
# on_critical = "my-pager --stdin"   # run for each new critical alert, the alert as JSON on stdin
# ended_after = "24h"                # a log silent this long with no finish line is a run that ended

[notify]
# urls = [
#   "https://hooks.slack.com/services/T000/B000/XXXX",     # Slack incoming webhook
#   "https://discord.com/api/webhooks/000/XXXX",           # Discord webhook
#   { url = "https://ntfy.sh/my-secret-topic", format = "ntfy" },
# ]
# format = "json"                    # for URLs whose service can't be told from the URL
# on = ["critical"]                  # critical, warning, finished, quiet, cleared, or "all"

[serve]
# host = "127.0.0.1"
# port = 8765
"""
