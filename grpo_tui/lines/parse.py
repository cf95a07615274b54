"""Physical log lines -> metric records and events (pure, incremental, never raises).

The pipeline per line follows docs/log-format.md §2, §10: paste prefixes (``grep -n``, ``> ``),
ANSI, the Ray prefix, ``\\r``-joined progress bars, the Ray dedup suffix, then one of the
known headers (Miles new/old, SGLang, Ray driver).  A header-less line continues the
previous record of the same source: a wrapped dict, a traceback, the httpx second line.

Hostile input is bounded, and every bound is counted (issue #9): a line is cut to MAX_LINE
characters (counts.long_lines) before any regex work; an open record holds at most
_PENDING_MAX characters and re-reads only its unfinished pair, within a budget, so work stays
linear; an id that is negative, not ASCII digits or past 2**53 makes its line unreadable;
names past MAX_NAMES are dropped (counts.dropped_metrics).

Speed (issue #11).  A finished log is ~97 % noise and a few thousand metric and event lines, so
the cost is in touching every line at all.  The accelerated path (the optional C module
_scan.c, chosen in _load_scan; GRPO_TUI_PURE=1 forces the pure one) is a bytes path end to end:
files.iter_byte_blocks reads blocks of complete lines as bytes, feed_block hands a block to
_scan (scan_fold, or scan_raw in a reader thread then fold_lazy), which in one pass over the bytes
finds the candidate lines, the offsets of every line, the few skipped lines the per-source time
bookkeeping can still show (`keep`: the newest 16 per source before a candidate that may read
that source, with their key and text), and for candidates with a plain Miles header its fields;
the result is a Fold, C arrays whose Python objects are made only as the parser reads them
(Fold.run walks the stretches the parser only keeps books over).  Python then decodes only those lines:
no str per noise line, no split/join/encode of the block, the noise run's tail for a rejoin
read lazily (_noise_run).  The C side also reads the common heads whole, so Python only stores
what it hands over: a noise-for-sure head is folded into the noise run around it (per run, the
per-source time, error and pop it leaves: _take_folded); a metric record with the common dict
`{'k': number, ...}` comes with that dict read into ints and floats and its header's strings,
an ASCII `ft ` line with _ft_event's result (_feed_ready); on a whole-file read (`packed`) a common
rollout, perf or step record carries its numbers as a _scan.Packed, no dict (unpack() makes the
dict where Python reads the record).  Everything unusual (nan/inf,
np.float64(...), strings, nested, cut, wrapped, pasted, prefixed oddly, a dedup suffix, control
bytes, bad UTF-8) is handed back to the exact Python reader: the C side only ever says "this
line is plain, here are its fields (or its values)", never interprets a line differently.  Why not a C reader for whole records: their bookkeeping
(restarts, doubled steps, pending continuations, per-source clocks) is Python state that both
paths must share to stay equal; the C part stays small enough to prove equal on every sample
log, fixture, fuzzed mix and hostile line (tests/test_scan_equivalence.py), and every read in
it is bounded by the buffer's length, never by a length read from the log.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date as _date
from functools import partial
from typing import Any

from . import pure_asked
from .formats import parse_trl, parse_verl
from .launch import ARG_DUMP_NAMES, parse_launch_flags
from .records import STORE_EVENT_KINDS, Event, Item, MetricRecord, bounded_int
from .values import ParsedDict, parse_dict, parse_more

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
# _RAY on what is left, cost ~4 us a line; the groups are _RAY's on the line _ANSI.sub leaves
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
_REJOIN_PARTS = 8  # a wrapped header is looked for this many lines back
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
        # verl `step:N - key:value` lines and TRL log dicts
        or "step:" in line
        or "{'" in line
    )


# _scan.c's heads: what each field of a candidate's tuple is (enum H_*; see miles_head there) and
# what its message is (HEAD_*)
(
    _H_KEY,
    _H_ACTOR,
    _H_ACTOR_END,
    _H_PID,
    _H_PID_END,
    _H_DATE,
    _H_MS,
    _H_PROC,
    _H_PROC_END,
    _H_FILE,
    _H_FILE_END,
    _H_MSG,
    _H_MSG_END,
    _H_REPEATED,
    _H_TIME_END,
    _H_DAYS,
    _H_SOD,
    _H_MSV,
    _H_CLASS,
    _H_ROLE,
    _H_KIND,
    _H_KIND_END,
    _H_ID,
    _H_DICT,
    _H_END_B,
    _H_OWN,
    _H_KID,
    _H_ERR,
) = range(28)
_H_COUNT = 36  # a head of offsets: a tuple of this many ints (_scan.c's H_N)
_HEAD_OTHER, _HEAD_NOISE, _HEAD_METRIC, _HEAD_FT, _HEAD_QUIET, _HEAD_CKPT = 0, 1, 2, 3, 4, 5
# a head the scanner read whole comes ready (_scan.c: ready_head), told apart by its length:
# (key, pid, MetricRecord) or (key, pid, error message or None, Event)
_READY_METRIC, _READY_FT = 3, 4

_SKIPPED_PER_SOURCE = 16  # skipped lines kept per source to find its newest time (_scan.c: PER_KEY)
MAX_LINE = 1 << 20  # characters; a longer line is cut to this before any other work
MAX_NAMES = 1024  # distinct metric names per parse (real runs log one to two hundred)


def _load_scan():
    """The one place the noise scanner is chosen: the C accelerator (grpo_tui/lines/_scan.c)
    when it was built and GRPO_TUI_PURE is unset (or "0"), else None (the pure-Python path)."""
    if pure_asked():
        return None
    try:
        from . import _scan
    except ImportError:
        return None
    if (getattr(_scan, "REJOIN_PARTS", None), getattr(_scan, "PER_KEY", None)) != (_REJOIN_PARTS, _SKIPPED_PER_SOURCE):
        return None  # built from other constants (a stale build): its shortcuts would differ
    if not hasattr(_scan, "scan_raw_untimed"):
        return None  # a build older than LineParser.noise_times (a stale build too)
    _scan.set_types(MetricRecord, Event)  # the classes its ready heads are made as
    return _scan


SCAN = _load_scan()
PACKED = getattr(SCAN, "Packed", None)  # a record's values without a dict (LineParser.packed)


def unpack(rec: MetricRecord) -> dict:
    """The record's values as a dict, made and set on it when they came packed (see
    LineParser.packed): for Python code that reads a record the whole-file path made."""
    values: Any = rec.metrics
    if type(values) is PACKED:
        values = rec.metrics = values.dict()
    return values


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
            # importing calendar and locale for it (~2 ms of every start; datetime numpy imports anyway)
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


class LineParser:
    """Feed physical lines in order; get records and events back.

    Incremental by design: the live follower feeds a few lines at a time, ``check`` feeds
    a whole file.  ``flush()`` closes what is still open (end of file, or the caller's
    choice while idle).
    """

    def __init__(self, quick_reject: bool = True, accel: bool = True) -> None:
        self.quick_reject = quick_reject
        # feed_lines' noise scanner: the C one (SCAN) unless accel=False or it is not built
        self._scan = SCAN if accel else None
        # _feed_scanned's stretches of noise runs and ready heads walked in C (Fold.run; else the
        # loop's own code walks them)
        self._ready_run = accel and SCAN is not None
        self._trl_index = 0  # TRL dicts carry no step: count them
        self._names: set[str] = set()  # metric names handed out so far (at most MAX_NAMES)
        self._stamped = ""  # _last_stamped: the newest skipped line carrying a timestamp
        self._stamped_lazy: tuple | None = None  # ... or (line getter, index) not read yet
        # Skipped (fast-path) lines that may carry a header, per raw source prefix: a header-less
        # line reads its source's time from them, exactly as if every line had been parsed.
        self._skipped: dict[str, deque[str]] = {}
        self._cur_key = ""
        self.counts = ParseCounts()
        # Whole-file reads (pipeline.judge_path, feed_file) set this: the common rollout, perf and
        # step records the scanner reads whole may then carry their values as a _scan.Packed, not
        # a dict (the store writes them into its columns; only Python code that reads a record
        # makes its dict: unpack()).  Their records go to the store and nowhere else.
        self.packed = False
        # False (export: pipeline.judge_path(rows_only=True)): the noise lines' times are not kept -
        # no skipped lines per source, no newest stamped line - so a header-less line's time is
        # its source's newest head's, and sync_time() the newest head's.  Only times change
        # (every item, count and value is the same), and nobody who sets it reads them; the C
        # walk then looks at a noise line only to find that it is one (scan_raw_untimed: no
        # timestamp test, no source key, no kept lines).
        self.noise_times = True
        # True (export as well): only the events the store's rows depend on (STORE_EVENT_KINDS)
        # are handed out; every other one is counted and booked as usual but not made, where the
        # scanner reads it whole (Fold.run's `lean`), or not handed out (the Python reader's).
        self.store_events_only = False
        self._line_cut = False  # the current line was cut to MAX_LINE: it can't continue
        self._pending: _Pending | None = None
        self._last_time: dict[str | None, tuple[str | None, float | None]] = {}
        self._last_error: dict[str | None, str] = {}
        self.last_ts: float | None = None
        self.first_ts: float | None = None
        # The last few consecutive noise lines (raw, line_no): a metric line hard-wrapped inside
        # its header or message (a paste at a fixed column) starts in them.
        self._noise: deque[tuple[str, int]] = deque(maxlen=_REJOIN_PARTS)
        # The scanned path leaves the newest noise runs unread: (line getter, first, end, base,
        # lines pushed after them, the runs before it: the same, or None) following what _noise
        # holds; _noise_run reads them only when it is looked at (a rejoin), which few lines need.
        self._noise_lazy: tuple | None = None

    @property
    def _last_stamped(self) -> str:
        """The newest skipped line carrying a timestamp (its time is read at flush/sync_time)."""
        lazy = self._stamped_lazy
        if lazy is not None:
            self._stamped_lazy = None
            self._stamped = lazy[0](lazy[1])
        return self._stamped

    @_last_stamped.setter
    def _last_stamped(self, raw: str) -> None:
        self._stamped_lazy = None
        self._stamped = raw

    @property
    def _noise_run(self) -> deque[tuple[str, int]]:
        """The last few noise lines (raw, line_no), the lazily kept runs read in first."""
        lazy = self._noise_lazy
        if lazy is not None:
            self._noise_lazy = None
            self._read_runs(lazy)
        return self._noise

    def _read_runs(self, lazy: tuple) -> None:
        get, a, b, base, extra, older = lazy
        if older is not None:
            self._read_runs(older)
        self._noise.extend((get(k), base + k + 1) for k in range(a, b))
        self._noise.extend(extra)

    def _lazy_run(self, get, a: int, b: int, base: int) -> None:
        """Lines a..b-1 of the batch join the noise run unread (after what it holds).  The runs
        before, unread too, stay so as long as the newest ones don't fill the deque."""
        older, have = self._noise_lazy, b - a
        if older is not None:
            chain, run = [], older
            while run is not None and have < _REJOIN_PARTS:
                chain.append(run)
                have += run[2] - run[1] + len(run[4])
                run = run[5]
            if run is not None:  # older than the deque holds: dropped
                self._noise.clear()
                older = None
                for r in reversed(chain):
                    older = (r[0], r[1], r[2], r[3], r[4], older)
        self._noise_lazy = (get, a, b, base, [], older)

    def _has_noise(self) -> bool:
        """bool(_noise_run), its lazy runs left unread (each holds a line at least)."""
        return self._noise_lazy is not None or bool(self._noise)

    def _noise_newest_first(self) -> Iterator[tuple[str, int]]:
        """_noise_run's lines from the newest back, each read only when asked for.  Why: _rejoin
        mostly stops at the newest (another source's line), and reading the lazy runs whole took
        eight lines out of the buffer for it."""
        left = _REJOIN_PARTS  # the deque's length: the oldest go first
        run = self._noise_lazy
        while run is not None:
            get, a, b, base, extra, older = run
            for item in reversed(extra):
                if left == 0:
                    return
                left -= 1
                yield item
            for k in range(b - 1, a - 1, -1):
                if left == 0:
                    return
                left -= 1
                yield get(k), base + k + 1
            run = older
        for item in reversed(list(self._noise)):
            if left == 0:
                return
            left -= 1
            yield item

    def _noise_push(self, raw: str, line_no: int) -> None:
        """_noise_run.append, leaving a lazy tail unread."""
        lazy = self._noise_lazy
        if lazy is None:
            self._noise.append((raw, line_no))
            return
        extra = lazy[4]
        extra.append((raw, line_no))
        if len(extra) >= _REJOIN_PARTS:  # the pushed lines alone fill the deque
            self._noise_lazy = None
            self._noise.clear()
            self._noise.extend(extra)

    def _noise_clear(self) -> None:
        self._noise_lazy = None
        self._noise.clear()

    # -- public -----------------------------------------------------------------
    def feed(self, raw: str) -> list[Item]:
        """Parse one physical line (without its ``\\n``)."""
        c = self.counts
        c.lines += 1
        line_no = c.lines
        out: list[Item] = []
        raw = self._bound(raw)
        if raw.endswith("\r"):
            raw = raw.rstrip("\r")
        if "\x00" in raw or ("\ufffd" in raw and raw.count("\ufffd") > 4):
            c.unreadable += 1
            return out
        if self.quick_reject and self._pending is None and not is_candidate(raw) and not _CONTROL_NO_ESC.search(raw):
            if self.first_ts is None:
                self._observe(raw)
            elif self.noise_times and "[" in raw[:64]:
                self._last_stamped = raw
                self._remember_skipped(raw)
            c.noise += 1
            self._noise_push(raw, line_no)
            return out
        self._cur_key = _source_key(raw) if self.quick_reject else ""
        pre = self._peel(raw)
        text = pre.text
        header = self._header(text)
        pend = self._pending
        if pend is not None:
            if header is None and self._continues(pend, pre) and self._continue(pend, pre, out):
                return out
            self._close_pending(out)
        if header is None and self._has_noise() and self._rejoin(pre, out):
            self._noise_clear()
            return out
        noise = c.noise
        if header is None:
            self._headerless(pre, line_no, out)
        else:
            self._with_header(pre, header, line_no, out)
        if c.noise > noise and self._pending is None:
            self._noise_push(raw, line_no)
        else:
            self._noise_clear()
        return out

    def feed_lines(self, lines: list[str]) -> list[Item]:
        """`feed` for a batch: the noise fast path runs inline (a finished file is 97 % noise)."""
        if not self.quick_reject:
            return self.feed_many(lines)
        if self._scan is not None and lines:
            got = self._feed_lines_scanned(lines)
            if got is not None:
                return got
        out: list[Item] = []
        c = self.counts
        run = self._noise_run
        feed = self.feed
        cand = is_candidate
        control = _CONTROL_NO_ESC.search
        n_lines = c.lines
        n_noise = c.noise
        times = self.noise_times
        for raw in lines:
            if (
                self._pending is None
                and self.first_ts is not None
                and len(raw) <= MAX_LINE
                and not cand(raw)
                and not control(raw)
                and "\x00" not in raw
                and "\ufffd" not in raw
                and not raw.endswith("\r")
            ):
                n_lines += 1
                n_noise += 1
                if times and "[" in raw[:64]:
                    self._stamped, self._stamped_lazy = raw, None  # _last_stamped = raw
                    self._remember_skipped(raw)
                run.append((raw, n_lines))
                continue
            c.lines, c.noise = n_lines, n_noise
            got = feed(raw)
            n_lines, n_noise = c.lines, c.noise
            if got:
                out.extend(got)
        c.lines, c.noise = n_lines, n_noise
        return out

    @property
    def block_scan(self):
        """What a reader thread may run on the next block ahead of feed_block (the C scanner's
        walk, scan_raw, which lets go of the GIL and makes no Python object: those are made by
        feed_block in the parsing thread, so the two threads seldom wait for the GIL), or None
        when feed_block does not scan blocks: its result is feed_block's `scanned`."""
        if self._scan is None or not self.quick_reject:
            return None
        return self._scan.scan_raw if self.noise_times else self._scan.scan_raw_untimed

    @property
    def block_read_scan(self):
        """block_scan's read and walk in one call (_scan.c: read_scan; files.ScannedReader), or
        None (the scanner has none: a build without read(2), or no block_scan)."""
        return getattr(self._scan, "read_scan", None) if self.block_scan is not None else None

    def feed_block(self, block: bytes | memoryview, scanned: tuple | None = None) -> list[Item]:
        """`feed_lines` for a block of bytes (complete lines joined by b"\\n", as files.py reads
        them): with the C scanner only the lines the parser must read are decoded; without it
        the block is decoded and split (the same lines: a newline never sits inside a UTF-8
        sequence, so decoding the block or each line gives the same text).  A block that is not
        bytes (a view of a reused buffer, files.iter_block_views) is kept by nothing once this
        returns: the lines read lazily from it are read first.  `scanned`: what `block_scan`
        (_scan.scan_raw) gave for this very block, or scan_folded's tuple for it
        (files.iter_scanned_blocks walks the next block in another thread while this one is
        parsed), used only when this parser scans blocks."""
        if self._scan is not None and self.quick_reject:
            # the block's fold as arrays (_scan.c: Fold), read item by item; it holds the block's
            # buffer and is dropped when this returns
            untimed = not self.noise_times
            fo = (
                self._scan.scan_fold(block, self.packed, untimed)
                if scanned is None
                else self._scan.fold_lazy(block, scanned, self.packed, untimed)
            )
            st = memoryview(fo.starts).cast("q")

            def get(i: int) -> str:
                return str(block[st[i] : st[i + 1] - 1], "utf-8", "replace")

            try:
                out = self._feed_scanned(fo, get)
            finally:
                del fo
            if not isinstance(block, bytes):
                self._read_lazy()
            return out
        return self.feed_lines(str(block, "utf-8", "replace").split("\n"))

    def _read_lazy(self) -> None:
        """Read the lines the scanned path left unread (_last_stamped, _noise_run) now."""
        if self._stamped_lazy is not None:
            _ = self._last_stamped  # (the properties read what they stand for and keep it)
        if self._noise_lazy is not None:
            _ = self._noise_run

    def _feed_lines_scanned(self, lines: list[str]) -> list[Item] | None:
        """feed_lines with the C scanner.  None when the batch can't be scanned as is (a line
        holding a newline)."""
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
        assert self._scan is not None  # (feed_lines calls this only with the scanner)
        fo = self._scan.scan_fold(data, False, not self.noise_times)
        if fo.n != len(lines):
            return None
        return self._feed_scanned(fo, lines.__getitem__)

    def _feed_scanned(self, fo, get) -> list[Item]:
        """The noise lines between two candidates are taken as one run: the same counts and
        bookkeeping as the inline path, per run instead of per line, and only for the lines
        that bookkeeping can still show (`keep`, see _scan.c; the run's tail for _noise_run and
        its newest stamped line for _last_stamped are read lazily).  `get(i)` is line i.  `fo`
        is _scan.c's Fold of the lines: fo.cand(k) the k-th candidate left (fo.cand(count) = n),
        fo.head(k) its head, fo.keep(k) / fo.kept(k) the kept lines (their source key or None,
        their text), per run before a candidate fo.last(k) its newest stamped line and fo.fold(k)
        what the noise-for-sure heads taken into it leave behind (or None); fo.run walks the
        stretches the loop only keeps books over (_run_ready)."""
        n = fo.n
        cand, keep, head, lasts, fold_of, kept = fo.cand, fo.keep, fo.head, fo.last, fo.fold, fo.kept
        out: list[Item] = []
        c = self.counts
        feed = self.feed
        skipped = self._skipped
        ci = ki = 0
        i = 0
        base = c.lines  # line i of the batch is line number base + i + 1
        run = fo.run if self._ready_run else None
        while i < n:
            if self._pending is None and self.first_ts is not None:
                if run is not None:
                    lazy = self._noise_lazy
                    tail_from, tail_whole = (-1, False) if lazy is None else self._tail_here(lazy, get, base, i)
                    i, ci, ki = self._run_ready(
                        run(
                            i,
                            ci,
                            ki,
                            base,
                            self._names,
                            MAX_NAMES,
                            self._last_time,
                            skipped,
                            self._last_error,
                            _source_key,
                            _new_skipped,
                            lazy is not None,
                            self.last_ts,
                            out,
                            self.store_events_only,
                            not self._has_noise(),
                            tail_from,
                            tail_whole,
                        ),
                        get,
                        base,
                    )
                    if i >= n:
                        break
                j = cand(ci)
                if j > i:
                    # lines i..j-1 are noise the inline path would skip: bookkeep them as a run
                    c.lines += j - i
                    c.noise += j - i
                    fold = fold_of(ci)
                    if fold is not None and fold[0] >= i:
                        self._take_folded(fold, i)
                    while keep(ki) < i:
                        ki += 1
                    while keep(ki) < j:
                        key, raw = kept(ki)
                        if key is None:
                            key = _source_key(raw)
                        dq = skipped.get(key)
                        if dq is None:
                            dq = skipped[key] = _new_skipped()
                        dq.append(raw)
                        ki += 1
                    last = lasts(ci)
                    if last >= i:  # the run's newest stamped line (-1: none)
                        self._stamped_lazy = (get, last)
                    if j - i >= _REJOIN_PARTS:
                        self._noise_clear()  # the run alone fills the deque
                        self._noise_lazy = (get, j - _REJOIN_PARTS, j, base, [], None)
                    else:
                        self._lazy_run(get, i, j, base)
                    i = j
                    if i >= n:
                        break
            h = head(ci) if i == cand(ci) else None
            if h is None:
                got = feed(get(i))
                if got:
                    out.extend(got)
            elif len(h) != _H_COUNT:
                self._feed_ready(h, out)
            else:
                got = self._feed_head(get(i), h)
                if got:
                    out.extend(got)
            i += 1
            while cand(ci) < i:
                ci += 1
        return out

    def _tail_here(self, lazy: tuple, get, base: int, i: int) -> tuple[int, bool]:
        """(t, whole) when the noise run's unread tail is this block's lines t..i-1 in order (its
        lazy runs over them, the lines pushed after each being the lines that follow it), `whole`
        when the run holds nothing older; (-1, False) when it is not.  Fold.run walks on from
        there as from a run of its own: it reads those lines in the buffer."""
        t = i
        run = lazy
        while run is not None:
            rget, a, b, rbase, extra, older = run
            if rget is not get or rbase != base or b + len(extra) != t:
                return -1, False
            for k, (raw, line_no) in enumerate(extra):  # (read only where the places fit)
                if line_no != base + b + k + 1 or raw != get(b + k):
                    return -1, False
            t = a
            run = older
        return t, not self._noise

    def _run_ready(self, got: tuple, get, base: int) -> tuple[int, int, int]:
        """The books _scan.c's ready_run kept over a stretch, set as the loop would have left
        them (its docstring in _scan.c says what each is); returns where the loop goes on."""
        (
            i,
            ci,
            ki,
            lines,
            noise,
            metric_lines,
            records,
            event_lines,
            unreadable,
            last_ts,
            cur_key,
            cut,
            stamped_cleared,
            stamped_lazy,
            noise_state,
            tail_a,
            tail_b,
            tail_clear,
        ) = got
        if lines:
            c = self.counts
            c.lines += lines
            c.noise += noise
            c.metric_lines += metric_lines
            c.records += records
            c.event_lines += event_lines
            c.unreadable += unreadable
            self.last_ts = last_ts
            if cur_key is not None:
                self._cur_key = cur_key
            if cut:
                self._line_cut = False
            if stamped_cleared:
                self._stamped, self._stamped_lazy = "", None
            if stamped_lazy >= 0:
                self._stamped_lazy = (get, stamped_lazy)
            if noise_state == 1:  # a head came last: _noise_clear
                self._noise_lazy = None
                self._noise.clear()
            elif noise_state == 2:  # a run came last: its tail, read when looked at
                if tail_clear:
                    self._noise.clear()
                self._noise_lazy = (get, tail_a, tail_b, base, [], None)
        return i, ci, ki

    def _take_folded(self, fold: tuple, i: int) -> None:
        """What the noise-for-sure heads _scan.c's fold took into the run starting at line i
        leave behind (_feed_head's _HEAD_NOISE branch, newest per source; fold made the values):
        called before the run's kept lines are appended, as their pops come before those (fold
        dropped the kept lines they pop).  Heads before i were fed one by one (a record was
        open then); the run's newest head is at or after i (the caller checks)."""
        _, ts, cur_key, entries, errors = fold
        if self.last_ts is None or ts > self.last_ts:  # the newest time of them all
            self.last_ts = ts
        self._line_cut = False
        self._stamped, self._stamped_lazy = "", None  # _last_stamped = ""
        skipped, last_time = self._skipped, self._last_time
        # in line order: keys differing only in colours share a pid (_last_time, _last_error)
        for idx, key, pid, when in entries:
            if idx >= i:
                last_time[pid] = when
                if skipped:
                    skipped.pop(key, None)
        self._cur_key = cur_key
        for idx, pid, msg in errors:
            if idx >= i:
                self._last_error[pid] = msg

    def _feed_ready(self, h: tuple, out: list[Item]) -> None:
        """_feed_head for a head the scanner read whole (_scan.c: ready_head): _header_fields'
        bookkeeping, then the record (its values read: _HEAD_METRIC) or the event (_ft_event's
        result: _HEAD_FT) it made, given its line number."""
        key, pid, item = h[0], h[1], h[-1]
        c = self.counts
        c.lines += 1
        item.line_no = c.lines
        self._line_cut = False
        self._cur_key = key
        if self._pending is not None:
            self._close_pending(out)
        self._head_seen(key, pid, item.time, item.ts)
        self._noise_lazy = None  # _noise_clear (nothing below reads it)
        self._noise.clear()
        if len(h) == _READY_METRIC:
            values = unpack(item)
            names = self._names
            if len(names) + len(values) <= MAX_NAMES or names.issuperset(values):  # _capped
                names.update(values)
            else:
                values = item.metrics = self._capped(values, {})
            if values:
                c.metric_lines += 1
                c.records += 1
                out.append(item)
            else:
                c.unreadable += 1
            return
        if h[2] is not None:
            self._last_error[pid] = h[2]
        c.event_lines += 1
        self._hand_out(item, out)

    def _hand_out(self, ev: Event, out: list[Item]) -> None:
        """An event made: into `out`, but where this read keeps only the events the store's rows
        depend on (store_events_only), only those (it was counted and booked all the same)."""
        if not self.store_events_only or ev.kind in STORE_EVENT_KINDS:
            out.append(ev)

    def _head_seen(self, key: str, pid: str | None, time_text: str, ts: float) -> None:
        """_header_fields' bookkeeping of a stamped Miles header (the scanner read its fields):
        the log's clocks, the source's newest time, its skipped lines dropped."""
        last = self.last_ts
        if last is None or ts > last:
            self.last_ts = ts
        if self.first_ts is None:
            self.first_ts = ts
        self._stamped, self._stamped_lazy = "", None  # _last_stamped = ""
        self._last_time[pid] = (time_text, ts)
        if self._skipped:
            self._skipped.pop(key, None)

    def _feed_head(self, raw: str, h: tuple) -> list[Item]:
        """feed() for a candidate whose Miles header the scanner read (_scan.c: miles_head): the
        same steps, with the header's fields taken from `h` instead of _peel and the regexes.
        miles_head vouches that feed would find no cut, no NUL or U+FFFD, nothing for _peel to
        change after the Ray prefix but a dedup mark it cuts off (the message ends at `end`),
        and _MILES matching with these very fields.  It also says what the message is (`cls`):
        noise for sure, a common metric record or an `ft ` line _classify hands to _ft_event are
        taken here, in the few steps _header_fields would come to; anything else goes through
        _header_fields.  A ready head (the scanner read the message too) goes to _feed_ready."""
        if len(h) != _H_COUNT:
            ready: list[Item] = []
            self._feed_ready(h, ready)
            return ready
        (
            key,
            a0,
            a1,
            p0,
            p1,
            d0,
            ms0,
            pr0,
            pr1,
            f0,
            f1,
            m0,
            end,
            repeated,
            te,
            days,
            sod,
            msv,
            cls,
            r0,
            k0,
            k1,
            n,
            dict0,
        ) = h[:24]  # _scan.c: enum H_*
        if cls == _HEAD_CKPT:  # a header-less checkpoint line: Fold.run's, else feed's
            return self.feed(raw)
        if cls == _HEAD_QUIET:
            return self._feed_quiet(
                raw,
                key,
                _pid_of(raw[p0:p1]) if p0 >= 0 else None,
                raw[a0:a1] if a0 >= 0 else None,
                raw[m0:end],
                repeated,
                n == 1,
            )
        line_no, cur_key = self._head_line(raw, key)
        c = self.counts
        out: list[Item] = []
        pid = _pid_of(raw[p0:p1]) if p0 >= 0 else None
        if self._pending is not None:
            self._close_pending(out)
        if cls == _HEAD_OTHER:
            pre = _Line(raw[d0 - 1 : end], pid, raw[a0:a1] if a0 >= 0 else None, repeated, key > 0)
            noise = c.noise
            self._header_fields(
                pre,
                raw[d0 : d0 + 10],
                raw[d0 + 11 : d0 + 19],
                raw[ms0 : ms0 + 3] if ms0 >= 0 else None,
                raw[pr0:pr1] if pr0 >= 0 else None,
                raw[f0:f1],
                raw[m0:end],
                line_no,
                out,
            )
            if c.noise > noise and self._pending is None:
                self._noise_push(raw, line_no)
            else:
                self._noise_clear()
            return out
        # _header_fields' bookkeeping, then the message the scanner classified
        time_text = raw[d0:te] if te >= 0 else raw[d0 : d0 + 19] + "." + raw[ms0 : ms0 + 3]
        ts = days * 86400 + sod + msv / 1000.0  # _fast_ts
        self._head_seen(cur_key, pid, time_text, ts)
        if cls == _HEAD_METRIC:  # _start_record with _METRIC_MSG's fields
            c.metric_lines += 1
            rec = MetricRecord(
                raw[k0:k1],
                n,
                {},
                raw[r0 : k0 - 1] if r0 >= 0 else "",
                time_text,
                ts,
                raw[pr0:pr1] if pr0 >= 0 else None,
                raw[f0:f1],
                raw[a0:a1] if a0 >= 0 else None,
                line_no,
                repeated=repeated,
            )
            head = raw[dict0:end]
            scan = self._scan
            got = scan.read_dict(head) if scan is not None else None
            if got is None:
                self._read_record(rec, head, pid, out)  # nan, inf, a long int: the Python reader
            else:  # _finish_record of a complete dict with no non-finite value
                values = self._capped(got, rec.nonfinite)
                if values:
                    rec.metrics = values
                    c.records += 1
                    out.append(rec)
                else:
                    c.unreadable += 1
                    c.metric_lines -= 1
            self._noise_clear()
            return out
        msg = raw[m0:end]
        if "Error" in msg:
            self._last_error[pid] = msg
        if cls == _HEAD_FT:  # _events -> _classify -> _ft_event
            got = self._ft_event(msg)
            if got is not None:
                c.event_lines += 1
                self._hand_out(Event(got[0], time_text, ts, line_no, msg.strip(), got[1]), out)
                self._noise_clear()
                return out
        c.noise += 1
        self._noise_push(raw, line_no)
        return out

    def _feed_quiet(
        self, raw: str, key: int, pid: str | None, actor: str | None, msg: str, repeated: int, alone: bool = False
    ) -> list[Item]:
        """feed() for a header-less candidate the scanner found noise for sure (_scan.c: quiet_head
        vouches that _peel leaves the text msg with this pid, actor and dedup count, that no header
        regex matches it, and that _headerless finds no record, event or other format in it): the same steps,
        without the peel, the regexes and the tests that find nothing.  `alone`: the scanner
        also saw that _rejoin would give up at once (the line before is another source's).  An
        open record (its continuation may be this line) takes feed's own path."""
        if self._pending is not None:
            return self.feed(raw)
        line_no, cur_key = self._head_line(raw, key)
        out: list[Item] = []
        if not alone and self._has_noise() and self._rejoin(_Line(msg, pid, actor, repeated, key > 0), out):
            self._noise_clear()
            return out
        self._catch_up(cur_key)
        self.counts.noise += 1
        self._noise_push(raw, line_no)
        return out

    def _head_line(self, raw: str, key: int) -> tuple[int, str]:
        """What feed() books first for a line the scanner read the head of (no cut: it is short
        enough): its line number, and its source key (raw[:key]) as the current one."""
        c = self.counts
        c.lines += 1
        self._line_cut = False
        cur_key = self._cur_key = raw[:key]
        return c.lines, cur_key

    def _bound(self, raw: str) -> str:
        """Cut a line longer than MAX_LINE (a 200 MB line must not become a 200 MB dict, nor be
        scanned by every regex); the cut line is counted and ends any record it holds."""
        self._line_cut = len(raw) > MAX_LINE
        if self._line_cut:
            self.counts.long_lines += 1
            return raw[:MAX_LINE]
        return raw

    def feed_many(self, lines) -> list[Item]:
        out: list[Item] = []
        for line in lines:
            out.extend(self.feed(line))
        return out

    def flush(self) -> list[Item]:
        out: list[Item] = []
        if self.quick_reject and self._last_stamped:
            last = self.last_ts
            self._observe(self._last_stamped)  # the log's last time, for no-steps / stall judgement
            self._last_stamped = ""
            if last is not None and self.last_ts is not None and self.last_ts < last:
                self.last_ts = last
        if self._pending is not None:
            self._close_pending(out)
        return out

    def sync_time(self) -> float | None:
        """The newest log time seen, skipped (fast-path) lines included; changes nothing else."""
        raw = self._last_stamped
        if self.quick_reject and raw:
            m = self._header(self._peel(raw).text)
            if m is not None:
                gd = m.groupdict()
                self._note_time(_fast_ts(gd["date"], gd["time"], gd.get("ms")))
        return self.last_ts

    @property
    def has_pending(self) -> bool:
        return self._pending is not None

    # -- line anatomy -----------------------------------------------------------
    def _peel(self, raw: str) -> _Line:
        if raw[:2] == "\x1b[":
            m = _RAY_COLOURED.match(raw)
            if m is not None:
                rest = raw[m.end() :]
                if (
                    "\x1b" not in rest
                    and "\r" not in rest
                    and "across cluster]" not in rest
                    and "Ray deduplicates" not in rest
                    and not _CONTROL.search(rest)
                ):
                    ip = m.group("ip")
                    return _Line(rest, m.group("pid") + ("@" + ip if ip else ""), m.group("actor"), 0, True)
        return self._peel_any(raw)

    def _peel_any(self, raw: str) -> _Line:
        text = raw
        paste = ""
        if text[:1] in (" ", "\t"):
            # A pasted log indented as a code block: "    (Actor pid=1) [2025-...] ...".
            bare = text.lstrip(" \t")
            if (bare.startswith("(") and "pid=" in bare[:80]) or _INDENTED_HEADER.match(bare):
                text = bare
        if text and (text[0] == ">" or text[0].isdigit()):
            m = _PASTE.match(text)
            if m:
                paste = m.group(0)
                text = text[m.end() :]
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        if _CONTROL.search(text):
            text = _CONTROL.sub("", text.replace("\t", "    ")) if "\t" in text else _CONTROL.sub("", text)
        line = _Line(text, paste=paste)
        if text.startswith("("):
            m = _RAY.match(text)
            if m:
                line.pid = m.group("pid") + (("@" + m.group("ip")) if m.group("ip") else "")
                line.actor = m.group("actor")
                line.has_prefix = True
                text = text[m.end() :]
            else:
                m = _RAY_SYS.match(text)
                if m:
                    line.pid = m.group("sys")
                    line.has_prefix = True
                    text = text[m.end() :]
        if "\r" in text:
            parts = [p for p in text.split("\r") if p.strip()]
            text = parts[-1] if parts else ""
        if "across cluster]" in text or "Ray deduplicates" in text:
            text, line.repeated = _strip_dedup(text)
        line.text = text
        return line

    @staticmethod
    def _header(text: str):
        if not text:
            return None
        ch = text[0]
        if ch == "[":
            m = _MILES.match(text)
            if m:
                return m
            return _SGLANG.match(text)
        if ch.isdigit() and len(text) > 19 and text[4] == "-":
            return _RAY_DRIVER.match(text)
        return None

    # -- continuation -------------------------------------------------------------
    @staticmethod
    def _continues(pend: _Pending, pre: _Line) -> bool:
        # A bare line joins whatever is open (pastes wrap without the Ray prefix);
        # a prefixed line joins only its own process's record.
        if pre.has_prefix:
            return pre.pid == pend.source
        return not pre.text.startswith("EXEC:")

    def _continue(self, pend: _Pending, pre: _Line, out: list[Item]) -> bool:
        """Add one header-less line to what is open; False when it does not belong there."""
        if pend.event is not None:
            ev = pend.event
            text = pre.text
            exc = _EXC_LINE.match(text) is not None
            if text and not text[0].isspace() and not exc and not _TB_GLUE.match(text):
                return False  # the traceback is over: this is an unrelated line
            if pend.size <= _PENDING_MAX:
                ev.lines.append(text)  # past the bound the lines still count, unkept
            pend.size += len(text)
            pend.lines += 1
            self.counts.event_lines += 1
            if _OOM.search(text) and not ev.data.get("oom"):
                ev.data["oom"] = True
                self._hand_out(Event("oom", ev.time, ev.ts, self.counts.lines, text.strip()), out)
            if exc:
                ev.data["exception"] = text.strip()
            return True
        text = pend.tail + pre.text
        more = parse_more(text)
        if more.error and pre.paste and not pre.has_prefix:
            # `3: 0.5, …` looked like a `grep -n` prefix but is wrapped dict text
            text = pend.tail + pre.paste + pre.text
            more = parse_more(text)
        if more.error:
            # The open dict was cut (a truncated line) and this line is something else:
            # the record keeps its complete pairs and the line is read on its own.
            return False
        assert pend.parsed is not None and pend.record is not None  # (a record's pending state)
        pend.parsed.extend(more)
        pend.rescanned += len(pend.tail)
        pend.size += len(text) - len(pend.tail)
        pend.tail = text[more.resume :]
        pend.lines += 1
        self.counts.metric_lines += 1
        if more.complete or pend.full() or self._line_cut:
            self._finish_record(pend.record, pend.parsed, out)
            self._pending = None
        return True

    def _rejoin(self, pre: _Line, out: list[Item]) -> bool:
        """A metric line hard-wrapped inside its header or message (a paste at a fixed column):
        join this header-less line to the noise lines just before it.  Wrapped parts are short:
        past _PENDING_MAX characters in all it is not tried (each try peels and joins them)."""
        tails = [pre.text]
        if pre.paste and not pre.has_prefix:
            tails.append(pre.paste + pre.text)  # `3: {…` is the rest of `rollout 3: {…`, not `grep -n`
        parts: list[_Line] = []
        size = len(pre.text)
        for raw, first_no in self._noise_newest_first():
            size += len(raw)
            if size > _PENDING_MAX:
                return False
            part = self._peel(raw)
            if parts and parts[-1].has_prefix and parts[-1].pid != part.pid:
                return False
            if pre.has_prefix and part.pid != pre.pid:
                return False
            parts.append(part)
            first = part
            if not _DATE_START.match(first.text):
                continue
            body = "".join(p.text for p in reversed(parts[:-1]))
            for tail in tails:
                text = first.text + body + tail
                if ": {" not in text and _ELIDED[0] not in text and _ELIDED[1] not in text:
                    continue  # no metric message can match (_METRIC_MSG): no header regex
                joined = _Line(text, first.pid, first.actor, first.repeated or pre.repeated, first.has_prefix)
                m = self._header(joined.text)
                if m is not None and _METRIC_MSG.match(m.group("msg")):
                    k = len(parts)
                    self.counts.noise -= k  # those lines were counted as noise: they are a metric line
                    self.counts.metric_lines += k
                    self._with_header(joined, m, first_no, out)
                    return True
        return False

    def _close_pending(self, out: list[Item]) -> None:
        pend = self._pending
        self._pending = None
        if pend is None or pend.record is None or pend.parsed is None:
            return
        if pend.elided and pend.tail.strip():
            # A pasted fragment ends without its `}`: its last pair (`'k': -0.3` with no comma) is
            # whole when the next line is something else.  Only for fragments: a cut live line's
            # last number may be cut too, so there the unfinished pair is dropped.
            last = parse_more(pend.tail.rstrip().rstrip(",") + "}")
            if last.complete and not last.error:
                pend.parsed.values.update(last.values)
                pend.parsed.raw_nonfinite.update(last.raw_nonfinite)
        self._finish_record(pend.record, pend.parsed, out)

    # -- messages ------------------------------------------------------------------
    def _with_header(self, pre: _Line, m: re.Match, line_no: int, out: list[Item]) -> None:
        gd = m.groupdict()
        self._header_fields(
            pre, gd["date"], gd["time"], gd.get("ms"), gd.get("proc"), gd.get("file"), gd["msg"], line_no, out
        )

    def _header_fields(
        self,
        pre: _Line,
        date: str,
        time: str,
        ms: str | None,
        proc: str | None,
        source: str | None,
        msg: str,
        line_no: int,
        out: list[Item],
    ) -> None:
        time_text = f"{date} {time}" + (f".{ms}" if ms else "")
        ts = _fast_ts(date, time, ms)
        self._note_time(ts)
        self._stamped, self._stamped_lazy = "", None  # _last_stamped = ""
        self._last_time[pre.pid] = (time_text, ts)
        if self._skipped:
            self._skipped.pop(self._cur_key, None)  # this header is newer than what was skipped
        mm = _METRIC_MSG.match(msg) if (": {" in msg or _ELIDED[0] in msg or _ELIDED[1] in msg) else None
        if mm:
            self._start_record(mm, pre, line_no, time_text, ts, proc, source, out)
            return
        if "Error" in msg:
            self._last_error[pre.pid] = msg
        if self._events(msg, pre, line_no, time_text, ts, out, header=True):
            return
        self.counts.noise += 1

    def _observe(self, raw: str) -> None:
        """Take the time (and error text) of a skipped line: a header-less line after it needs them."""
        if not raw:
            return
        pre = self._peel(raw)
        m = self._header(pre.text)
        if m is None:
            return
        gd = m.groupdict()
        time_text = f"{gd['date']} {gd['time']}" + (f".{gd['ms']}" if gd.get("ms") else "")
        ts = _fast_ts(gd["date"], gd["time"], gd.get("ms"))
        self._note_time(ts)
        self._last_time[pre.pid] = (time_text, ts)

    def _remember_skipped(self, raw: str) -> None:
        key = _source_key(raw)
        dq = self._skipped.get(key)
        if dq is None:
            dq = self._skipped[key] = _new_skipped()
        dq.append(raw)

    def _catch_up(self, key: str) -> None:
        """Give this source the time of its newest skipped header line (the full path's time)."""
        dq = self._skipped.pop(key, None)
        if not dq:
            return
        for raw in reversed(dq):
            pre = self._peel(raw)
            m = self._header(pre.text)
            if m is not None:
                gd = m.groupdict()
                time_text = f"{gd['date']} {gd['time']}" + (f".{gd['ms']}" if gd.get("ms") else "")
                self._last_time[pre.pid] = (time_text, _fast_ts(gd["date"], gd["time"], gd.get("ms")))
                return

    def _note_time(self, ts: float | None) -> None:
        if ts is not None:
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
            if self.first_ts is None:
                self.first_ts = ts

    def _headerless(self, pre: _Line, line_no: int, out: list[Item]) -> None:
        text = pre.text
        if self.quick_reject:
            self._catch_up(self._cur_key)
        last = self._last_time.get(pre.pid, (None, None))
        if ": {" in text or _ELIDED[0] in text or _ELIDED[1] in text:
            mm = _METRIC_ANY.search(text)
            if mm:
                self._start_record(mm, pre, line_no, last[0], last[1], None, None, out)
                return
        if self._events(text, pre, line_no, last[0], last[1], out, header=False):
            return
        if self._other_format(pre, line_no, last, out):
            return
        self.counts.noise += 1

    def _other_format(self, pre: _Line, line_no: int, last, out: list[Item]) -> bool:
        """verl and TRL console lines (no Miles header): same records, source names the format."""
        text = pre.text
        got = parse_verl(text)
        if got is not None:
            n, metrics, raw = got
            if n is None:
                self.counts.unreadable += 1  # `step:-1 - …`, `step:99999999999999999999 - …`
                return True
            kind, source = "rollout", "verl"
        else:
            trl = parse_trl(text) if "{'" in text else None
            if trl is None:
                return False
            kind, metrics, raw = trl
            if kind == "end":
                self.counts.event_lines += 1
                self._hand_out(
                    Event("train_done", last[0], last[1], line_no, text.strip()[:200], {"framework": "trl", **metrics}),
                    out,
                )
                return True
            source = "trl"
            self._trl_index += kind == "rollout"
            n = max(0, self._trl_index - 1)
        metrics = self._capped(metrics, raw)
        if not metrics:
            self.counts.unreadable += 1
            return True
        self.counts.metric_lines += 1
        self.counts.records += 1
        out.append(
            MetricRecord(
                kind=kind,
                n=n,
                metrics=metrics,
                time=last[0],
                ts=last[1],
                proc=source,
                source=source,
                actor=pre.actor,
                line_no=line_no,
                nonfinite=raw,
            )
        )
        return True

    def _start_record(
        self, mm: re.Match, pre: _Line, line_no: int, time_text, ts, proc, source, out: list[Item]
    ) -> None:
        c = self.counts
        n = bounded_int(mm.group("n"))
        if n is None:
            c.unreadable += 1  # `rollout -1:`, `rollout 99999999999999999999:`, `rollout １２３:`
            return
        c.metric_lines += 1
        rec = MetricRecord(
            kind=mm.group("kind"),
            n=n,
            metrics={},
            role=(mm.group("role") or ""),
            time=time_text,
            ts=ts,
            proc=proc,
            source=source,
            actor=pre.actor,
            line_no=line_no,
            repeated=pre.repeated,
        )
        self._read_record(rec, mm.group("d"), pre.pid, out)

    def _read_record(self, rec: MetricRecord, head: str, source: str | None, out: list[Item]) -> None:
        """Read a record's dict text `head` (from `{`, or an elided `... 'k': 1,`): finish the
        record, or keep it open for the continuation lines of its source."""
        elided = head[0] != "{"
        if elided:
            head = "{" + head  # `rollout 0: ... 'k': 1,`: read as `{..., 'k': 1,` (abridged)
        got = self._scan.read_dict(head) if self._scan is not None else None
        parsed = parse_dict(head) if got is None else ParsedDict(values=got)
        if parsed.complete or parsed.error or self._line_cut or len(head) > _PENDING_MAX:
            self._finish_record(rec, parsed, out)
            return
        self._pending = _Pending(
            source=source, record=rec, parsed=parsed, tail=head[parsed.resume :], size=len(head), elided=elided
        )

    def _finish_record(self, rec: MetricRecord, parsed, out: list[Item]) -> None:
        c = self.counts
        values = self._capped(parsed.values, parsed.raw_nonfinite)
        if not values:
            # Counted as unreadable: its physical lines move from metric to unreadable.
            c.unreadable += 1
            c.metric_lines -= 1
            return
        rec.metrics = values
        rec.nonfinite = parsed.raw_nonfinite
        rec.abridged = parsed.abridged
        rec.cut = not parsed.complete or parsed.error
        c.records += 1
        if rec.cut:
            c.cut_records += 1
        if rec.abridged:
            c.abridged_records += 1
        out.append(rec)

    def _capped(self, metrics: dict, nonfinite: dict) -> dict:
        """Drop (and count) values whose name is past the first MAX_NAMES names of this parse.

        The store keeps a dense column per name: 50,000 one-off names in a 0.8 MB log took
        860 MB, and more rollouts multiply that."""
        names = self._names
        if len(names) + len(metrics) <= MAX_NAMES or names.issuperset(metrics):
            names.update(metrics)
            return metrics
        kept = {}
        for k, v in metrics.items():
            if k in names or len(names) < MAX_NAMES:
                names.add(k)
                kept[k] = v
        self.counts.dropped_metrics += len(metrics) - len(kept)
        for k in nonfinite.keys() - kept.keys():
            del nonfinite[k]
        return kept

    def _events(self, msg: str, pre: _Line, line_no: int, time_text, ts, out: list[Item], header: bool) -> bool:
        """Recognise an event in one message; True when the line was one."""
        if not _event_anchor(msg) and not _ARG_DUMP.match(msg) and not ("train_async.py" in msg and ": {" in msg):
            return False  # (": {" alone, `Memory-Usage: {...}`, would reach _classify for nothing)
        ev = self._classify(msg, pre, line_no, time_text, ts, header)
        if ev is None:
            return False
        self.counts.event_lines += 1
        for x in ev if isinstance(ev, list) else (ev,):
            self._hand_out(x, out)
        return True

    def _classify(self, msg: str, pre: _Line, line_no: int, time_text, ts, header: bool):
        def ev(kind: str, **data) -> Event:
            return Event(kind, time_text, ts, line_no, msg.strip(), data)

        if "Traceback (most recent call last)" in msg:
            e = ev("traceback")
            e.lines.append(msg)
            self._pending = _Pending(source=pre.pid, event=e, size=len(msg))
            return e
        if "retrying..." in msg:
            m = _RETRY.search(msg)
            prev = self._last_error.get(pre.pid, "")
            status = (
                "503"
                if ("503" in msg or (not header and "503" in prev))
                else ("conn" if "connection" in msg.lower() else "error")
            )
            data: dict[str, Any] = {"status": status}
            if m:
                data.update(attempt=bounded_int(m.group("k")), max=bounded_int(m.group("max")), url=m.group("url"))
            return ev("engine_retry", **data)
        if "Max retries (" in msg:
            return ev("max_retries")
        stripped = msg.lstrip()
        if (
            stripped.startswith("EXEC:")
            or stripped.startswith("+ ray job submit")
            or (not header and ("train.py" in msg or "train_async.py" in msg) and " --" in msg)
        ):
            if "train.py" in msg or "train_async.py" in msg:
                return ev("launch", flags=parse_launch_flags(msg))
            return None
        if stripped.startswith("ft ") or " ft " in msg[:4]:
            got = self._ft_event(stripped)
            return None if got is None else ev(got[0], **got[1])
        # (each regex below searched only where the text it must find is: a few us per event line)
        m = _EVAL_SKIPPED.search(msg) if " skipped: " in msg else None
        if m:
            return ev("eval_skipped", rollout=bounded_int(m.group("n")), reason=m.group("reason").strip())
        if "Health check failed" in msg:
            return ev("health_check_failed")
        m = _RECOVERED.search(msg) if "Recovered " in msg else None
        if m:
            return ev("engines_recovered", count=bounded_int(m.group("n")))
        if ("out of memory" in msg or "OutOfMemoryError" in msg or "memory pressure" in msg) and _OOM.search(msg):
            return ev("oom")
        if "Watchdog caught collective operation timeout" in msg:
            return ev("nccl_timeout")
        m = _JOB.search(msg) if "Job '" in msg else None
        if m:
            return ev("job_" + m.group("state"), job=m.group("job"))
        if "Fatal async misuse" in msg:
            return ev("fatal")
        m = _CKPT.search(msg) if "checkpoint " in msg else None
        if m:
            kind = "checkpoint_saved" if m.group("ok").startswith("success") else "checkpoint_start"
            return ev(kind, iteration=bounded_int(m.group("it")))
        if ("W&B" in msg and "mode enabled" in msg) or stripped.startswith("wandb:"):
            return ev("wandb")
        if "Saving tensorboard log to" in msg:
            return ev("tensorboard")
        m = _ARG_DUMP.match(msg)
        if m and m.group("name") in ARG_DUMP_NAMES:
            return ev("arg", name=m.group("name"), value=m.group("value").rstrip())
        return None

    @staticmethod
    def _ft_event(text: str) -> tuple[str, dict] | None:
        """The event of an `ft k=v ...` line as (kind, data), or None."""
        fields = dict(_FT_FIELD.findall(text))
        if fields.get("ok") == "false" or fields.get("phase") == "fail":
            return "ft_fail", {k: v.strip('"') for k, v in fields.items()}
        op, fn, phase = fields.get("op"), fields.get("fn"), fields.get("phase")
        if op == "train" and phase == "start":
            attempt = bounded_int(fields.get("attempt", "0")) or 0
            if attempt >= 1:
                return "train_retry", {"attempt": attempt, "rollout": fields.get("rollout")}
            return None
        if (op == "update_weights" or fn == "update_weights") and phase in ("start", "end"):
            if op == "update_weights" or phase == "end":
                # One per rollout: keep the few fields a marker needs, not the whole line's.
                keep = {k: fields[k] for k in ("rollout", "ok", "elapsed_s") if k in fields}
                return "weight_update_" + phase, keep
        return None


def parse_lines(lines) -> tuple[list[Item], ParseCounts]:
    """Convenience for tests and small inputs: parse an iterable of lines completely."""
    p = LineParser()
    items = p.feed_many(lines)
    items.extend(p.flush())
    return items, p.counts
