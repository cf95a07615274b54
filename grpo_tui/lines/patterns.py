"""What a log line looks like: the regexes and literal tests the parser reads lines with (the
headers, the Ray prefix and dedup mark, metric messages, events), is_candidate (the anchors without
which a line is noise), the parser's bounds, and the small pure helpers on a line's parts."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date as _date
from functools import partial

from .formats import TABLE_START
from .native import _SKIPPED_PER_SOURCE
from .records import Event, MetricRecord, bounded_int
from .values import ParsedDict

_ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # '\r' is kept for the tqdm split
# a control character _peel drops (ESC aside: every Ray prefix has colours); the quick path reads
# a line holding one as a candidate, as dropping it may join an anchor (`step 0: \x1f{`)
_CONTROL_NO_ESC = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")
_PASTE = re.compile(
    r"^(?:>[ \t]?)++|^(?:[\w./-]+\.(?:log|txt|out|err):)?\d{1,9}[:-](?=[\[(\x1b ]|EXEC|Traceback|[a-z_]+ \d+: \{)"
)
_INDENTED_HEADER = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.,\d]*[ \w.-]*\] \S")
_RAY = re.compile(r"^\((?:(?P<actor>[^\s()]+) )?pid=(?P<pid>[^,)]+)(?:, ip=(?P<ip>[^)]+))?\) ?")
# _peel's short path: a Ray prefix in one colour (`\x1b[36m(Actor pid=1)\x1b[0m `) as Ray writes it,
# with no control byte in it.  Why: the general path's ANSI substitution over the whole line, then
# _RAY on what is left, is dear on every line; the groups are _RAY's on the line _ANSI.sub leaves
# (the same text between the colours; test_peel_short_path_equals_general_path).
_RAY_COLOURED = re.compile(
    r"\x1b\[[0-9;]*m\((?:(?P<actor>[^\s()\x00-\x1f\x7f]+) )?pid=(?P<pid>[^,)\x00-\x1f\x7f]+)"
    r"(?:, ip=(?P<ip>[^)\x00-\x1f\x7f]+))?\)\x1b\[0m ?"
)
_RAY_SYS = re.compile(r"^\((?P<sys>raylet|autoscaler[^)]*|gcs_server|dashboard[^)]*)\) ?")
_DEDUP_MARK = re.compile(r"\[repeated (?P<n>\d+)x across cluster\]")
_DEDUP_NOTE = "(Ray deduplicates logs by default."
_MILES = re.compile(
    r"^\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{3}))?"
    r"(?: ?(?P<proc>[A-Za-z_][\w.-]*))?\s*\] "
    r"(?:(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) )?"
    r"(?P<file>[\w.-]+\.py):(?P<lineno>\d+) - (?P<msg>.*)$"
)
_SGLANG = re.compile(
    r"^\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{3}))?[^\]]{0,40}\] ?(?P<msg>.*)$"
)
_RAY_DRIVER = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{3}))?\s+"
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?P<msg>.*)$"
)
# `(?P<d>…)`: the dict, or a pasted fragment whose head was elided (`rollout 0: ... 'k': 1, …`)
_METRIC_MSG = re.compile(
    r"^(?:(?P<role>[A-Za-z]\w*)-)?(?P<kind>rollout|perf|eval|multi_turn|step|passrate) (?P<n>-?\d+): "
    r"(?P<d>\{.*|(?:\.\.\.|\u2026) ?,? ?['\"].*)$"
)
_METRIC_ANY = re.compile(
    r"(?<![\w/.])(?:(?P<role>[A-Za-z]\w*)-)?(?P<kind>rollout|perf|eval|multi_turn|step|passrate) (?P<n>-?\d+): "
    r"(?P<d>\{.*|(?:\.\.\.|\u2026) ?,? ?['\"].*)$"
)
_ELIDED = (": ...", ": \u2026")  # a metric message whose dict head was elided (see _METRIC_MSG)
_EVAL_SKIPPED = re.compile(r"(?<![\w/])eval (?P<n>\d+) skipped: (?P<reason>.*)$")
_RETRY = re.compile(r"retrying\.\.\. \(attempt (?P<k>\d+)/(?P<max>\d+)(?:, url=(?P<url>[^,)]*))?")
_RECOVERED = re.compile(r"Recovered (?P<n>\d+) dead rollout engines")
_CKPT = re.compile(r"(?P<ok>successfully saved|saving) checkpoint (?:from |at )?iteration\s+(?P<it>\d+)")
_JOB = re.compile(r"Job '(?P<job>[^']+)' (?P<state>failed|succeeded|stopped)")
_DATE_START = re.compile(r"^\[(?:\d{1,4}(?:-\d{0,2}){0,2}(?: [\d:]{0,8})?)?$|^\[\d{4}-\d\d-\d\d \d\d:\d\d")
# Regexes here run on lines up to MAX_LINE long: none may backtrack over a run of blanks or word
# characters from every start (`\S.*?\s*$` and an unanchored `(\w+)=` were quadratic).
_ARG_DUMP = re.compile(r"^\s+(?P<name>[a-z_][a-z0-9_]*) \.{3,} (?P<value>\S.*)$")
_FT_FIELD = re.compile(r"(?<!\w)(\w+)=(\"(?:[^\"\\]|\\.)*\"|\S*)")
# The last line of a traceback (`ValueError: x`, `ray.exceptions.RayTaskError(OutOfMemoryError): …`).
_EXC_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?:\([^)]*\))?(?::|$)"
    r"|^[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Iteration|Group|Timeout|Failure)"
    r"(?:\([^)]*\))?(?::|\s*$)"
)
# Header-less, unindented lines that still belong to a traceback (chained exceptions).
_TB_GLUE = re.compile(
    r"^(?:Traceback \(most recent call last\)|During handling of the above|"
    r"The above exception was the direct cause)"
)
_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|killed due to memory pressure")


_TABLE_START = TABLE_START.match
_TABLE_FIRST = frozenset("0123456789| S")  # what a TABLE_START match starts with


# A line with none of these anchors cannot be a record or an event: it is counted as noise
# without further work (97 % of a real log).  Every anchor the classifier looks for must be
# covered here; an or-chain of `in` tests is about twice as fast as one alternation regex.
def is_candidate(line: str) -> bool:
    return (
        ": {" in line
        or ": \u2026" in line
        or "Error" in line
        or "retrying" in line
        or "ft " in line
        or "Traceback" in line
        or "Max retries" in line
        or "f memory" in line
        or "OfMemory" in line
        or "memory pressure" in line
        or "Health check failed" in line
        or "Recovered " in line
        or "Watchdog caught" in line
        or "Job '" in line
        or "Fatal async" in line
        or "Final validation" in line  # verl's last line of training (messages._other_format)
        or "checkpoint" in line
        or "W&B" in line
        or "wandb" in line
        or "tensorboard" in line
        or "EXEC:" in line
        or "+ ray job submit" in line
        or "train.py" in line
        or "train_async.py" in line
        or " skipped: " in line
        or " ..." in line
        # the rest of a metric line wrapped right at its `: {` (`rollout 3:` / ` {'a': 1}`)
        or line[:2] in ("{'", " {", '{"')
        or ") {" in line
        # verl `step:N - key:value` lines, TRL log dicts, JSON lines, prime-rl step lines
        or "step:" in line
        or "{'" in line
        or '{"' in line
        or "| Loss" in line
        or "| Reward" in line
        or "| reward: " in line  # (Megatron's iteration line: formats.parse_megatron)
        # a pasted table's header or row (formats.TABLE_START; its first character first: cheaper)
        or (line[:1] in _TABLE_FIRST and _TABLE_START(line) is not None)
    )


MAX_LINE = 1 << 20  # characters; a longer line is cut to this before any other work
MAX_NAMES = 1024  # distinct metric names per parse (real runs log one to two hundred)


# A source's deque of skipped lines (the newest _SKIPPED_PER_SOURCE).  A partial, not a def:
# Fold.run makes one for each source a quiet line or a header emptied (tens of thousands in a
# noisy log), and calling a partial of a C type from C runs no Python frame.
_new_skipped: Callable[[], deque[str]] = partial(deque, maxlen=_SKIPPED_PER_SOURCE)


def _source_key(raw: str) -> str:
    """The raw Ray prefix of a line (same process, same text), "" when it has none.

    Cheap on purpose (it runs on skipped noise lines); pasted lines (`grep -n`, `> `,
    indented) go through the full peel so they key like their unpasted selves."""
    first = raw[:1]
    if first == "(" or first == "\x1b":
        k = raw.find(")", 0, 200)
        return raw[: k + 1] if k > 0 else ""
    if first and (first in "> \t" or first.isdigit()):
        return raw[:0] + _paste_key(raw)
    return ""


def _paste_key(raw: str) -> str:
    text = _PASTE.sub("", raw, count=1).lstrip(" \t")
    return _source_key(text) if text[:1] in ("(", "\x1b") else ""


_CONT_LIMIT_LINES = 400  # a wrapped dict longer than this is given up (counted as cut)
# What an open record or traceback may hold: past this many characters it is closed (cut).
_PENDING_MAX = 64 << 10
# A continuation re-reads the unfinished pair (tail); over a record that re-reading may come to
# at most this many times the text taken in (plus the slack), so the work stays linear even for
# one value spread over hundreds of lines.  A real wrapped dict re-reads about 1x.
_RESCAN_FACTOR = 4
_RESCAN_SLACK = 1 << 10
_QUICK_ANCHORS = (
    ": {",
    "retrying",
    "Traceback",
    "Max retries",
    "ft ",
    "Health check failed",
    "Recovered ",
    "out of memory",
    "OutOfMemory",
    "memory pressure",
    "Watchdog caught",
    "Job '",
    "Fatal async",
    "checkpoint",
    "W&B",
    "wandb",
    "tensorboard",
    "EXEC:",
    " skipped: ",
    " ...",
    "+ ray job submit",
    "train.py",
)


def _quick_anchor(msg: str) -> bool:
    """Whether one of _QUICK_ANCHORS is in msg (an or-chain: faster than any() over the tuple)."""
    return ": {" in msg or _event_anchor(msg)


def _event_anchor(msg: str) -> bool:
    """_quick_anchor but for ": {": every branch of _classify needs one of these (the launch
    branch may also take "train_async.py"), so a message with ": {" alone is no event."""
    return (
        "retrying" in msg
        or "Traceback" in msg
        or "Max retries" in msg
        or "ft " in msg
        or "Health check failed" in msg
        or "Recovered " in msg
        or "out of memory" in msg
        or "OutOfMemory" in msg
        or "memory pressure" in msg
        or "Watchdog caught" in msg
        or "Job '" in msg
        or "Fatal async" in msg
        or "checkpoint" in msg
        or "W&B" in msg
        or "wandb" in msg
        or "tensorboard" in msg
        or "EXEC:" in msg
        or " skipped: " in msg
        or " ..." in msg
        or "+ ray job submit" in msg
        or "train.py" in msg
    )


@dataclass(slots=True)
class ParseCounts:
    """Every physical line lands in exactly one of metric/event/noise/unreadable."""

    lines: int = 0
    metric_lines: int = 0  # physical lines that belong to metric records
    event_lines: int = 0  # physical lines that belong to events
    noise: int = 0
    unreadable: int = 0  # binary junk, metric-looking lines with nothing readable
    records: int = 0
    cut_records: int = 0  # records kept partially (cut or abridged before the end)
    abridged_records: int = 0
    long_lines: int = 0  # lines cut to MAX_LINE (each is still counted in one class above)
    dropped_metrics: int = 0  # values whose name came after the first MAX_NAMES names

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class _Pending:
    """A record or traceback still collecting header-less continuation lines."""

    source: str | None  # Ray pid, or None for unprefixed text
    record: MetricRecord | None = None
    parsed: ParsedDict | None = None  # the pairs read so far
    tail: str = ""  # the unfinished pair's text: read again with the next line
    size: int = 0  # characters taken in
    rescanned: int = 0  # characters of tails read again
    lines: int = 1
    event: Event | None = None
    elided: bool = False  # a pasted fragment (`rollout 0: ... 'k': v,`): it may end without `}`

    def full(self) -> bool:
        """Give up on this record (keep it cut): too many lines, too much text, or too much
        re-reading of one unfinished value (quadratic work otherwise)."""
        return (
            self.lines >= _CONT_LIMIT_LINES
            or self.size > _PENDING_MAX
            or self.rescanned > _RESCAN_FACTOR * self.size + _RESCAN_SLACK
        )


@dataclass(slots=True)
class _Line:
    text: str
    pid: str | None = None
    actor: str | None = None
    repeated: int = 0
    has_prefix: bool = False
    paste: str = ""  # a `grep -n` / `> ` prefix taken off (it may be wrapped text instead)


def _pid_of(span: str) -> str:
    """A scanned head's pid (its prefix's `N` or `N, ip=X`) as _peel names it: `N`, `N@X`."""
    return span.replace(", ip=", "@", 1) if "," in span else span


def _fast_ts(date: str, time: str, ms: str | None) -> float | None:
    got = _sec_cache.get((date, time), _MISSING)
    if got is _MISSING:
        secs = _whole_seconds(date, time)
        if len(_sec_cache) >= 4096:
            _sec_cache.clear()
        _sec_cache[(date, time)] = secs
    else:
        secs = got  # type: ignore[assignment]
    if secs is None:
        return None
    try:
        return secs + (int(ms) / 1000.0 if ms else 0.0)
    except (ValueError, OverflowError):
        return None


def _whole_seconds(date: str, time: str) -> int | None:
    """The whole seconds of a `YYYY-MM-DD` `HH:MM:SS` pair (naive time read as UTC), or None."""
    try:
        y, mo, d = int(date[0:4]), int(date[5:7]), int(date[8:10])
        h, mi, s = int(time[0:2]), int(time[3:5]), int(time[6:8])
        base = _day_cache.get((y, mo, d))
        if base is None:
            # calendar.timegm's arithmetic (the same errors: a month or year out of range), without
            # importing calendar and locale for it at every start (datetime numpy imports anyway)
            base = (_date(y, mo, 1).toordinal() - _EPOCH_ORDINAL + d - 1) * 86400
            _day_cache[(y, mo, d)] = base
        return base + h * 3600 + mi * 60 + s
    except (ValueError, OverflowError):
        return None


_EPOCH_ORDINAL = _date(1970, 1, 1).toordinal()
_day_cache: dict[tuple[int, int, int], int] = {}
_sec_cache: dict[tuple[str, str], int | None] = {}  # a log has many lines per second
_MISSING = object()


def _strip_dedup(text: str) -> tuple[str, int]:
    """Take Ray's dedup suffix (`[repeated 7x across cluster]`, its note, or both) off the end.

    Found from its fixed text with find/rfind: the regex search `\\s*\\[repeated …$` it replaces
    restarted at every blank of a long run of spaces (quadratic: 100k spaces took 146 s)."""
    note = text.find(_DEDUP_NOTE)
    if note >= 0 and text.rstrip().endswith(")"):
        text = text[:note].rstrip()
    body = text.rstrip()
    if body.endswith("x across cluster]"):
        mark = body.rfind("[repeated ")
        m = _DEDUP_MARK.fullmatch(body, mark) if mark >= 0 else None
        if m:
            return body[:mark].rstrip(), bounded_int(m.group("n")) or 0
    return text, 0
