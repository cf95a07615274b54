"""Read the Python-repr dicts of Miles metric lines without ever calling eval.

Values seen in real logs: ints, floats in full precision, bare ``nan``/``inf``/``-inf``,
``np.float64(…)``/``np.int64(…)``, ``tensor(…)`` (custom metrics), strings, bools, None.
A dict can be abridged (``, ...}``) or cut mid-way (a live partial line, a paste); every
complete pair before the break is kept and the caller is told the dict was not whole.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

# The common case (plain numbers only) is validated and read by two C-level regex calls.
# `\d+(?:\.\d*)?`, not `\d+\.?\d*`: the latter splits a digit run in n ways, and a long run
# that fails to match later costs quadratic time (a 40k-digit value took 87 s).
_FAST_VALUE = r"-?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf)"
_FAST_DICT = re.compile(r"\{(?:'[^'\\]*': " + _FAST_VALUE + r"(?:, '[^'\\]*': " + _FAST_VALUE + r")*)?\}\s*")
_FAST_PAIR = re.compile(r"'([^'\\]*)': (" + _FAST_VALUE + r")")

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")
_NUMBER_RUN = re.compile(r"(?:\s*" + _NUMBER.pattern + r"\s*,)+")  # list items up to a comma
_WORD = re.compile(r"[-+]?[A-Za-z_][\w.]*")
# (the `*` patterns below match at any position, possibly empty: their match is never None)
_WS = re.compile(r"\s*")
_EXP_TAIL = re.compile(r"[eE][-+]?")
_STRING_RUN = {"'": re.compile(r"[^'\\]*"), '"': re.compile(r'[^"\\]*')}
_BALANCED_RUN = {"(": re.compile(r"[^()'\"]*"), "{": re.compile(r"[^{}'\"]*")}
_BRACKETS_RUN = re.compile(r"[^()\[\]{}'\"]*")  # a deep value's text between brackets and quotes
_CLOSER = {"(": ")", "[": "]", "{": "}"}

NONFINITE_TOKENS = {
    "nan": math.nan,
    "-nan": math.nan,
    "+nan": math.nan,  # C's printf writes -nan
    "inf": math.inf,
    "-inf": -math.inf,
    "+inf": math.inf,
    "NaN": math.nan,
    "-NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}
_INT_DIGITS = 308  # any int of at most this many digits fits a float64 column (< 1.8e308)
_TOKEN_MAX = 24  # a longer raw token (a 5,000-digit int) is kept abbreviated
_MAX_DEPTH = 64  # lists/calls nested deeper are kept as their text (the reader recurses per level)


@dataclass(slots=True)
class ParsedDict:
    """Result of reading one dict text."""

    values: dict[str, Any] = field(default_factory=dict)
    raw_nonfinite: dict[str, str] = field(default_factory=dict)  # key -> token as logged
    complete: bool = True  # closing brace reached
    abridged: bool = False  # ``...`` before the closing brace
    error: bool = False  # something unreadable stopped the scan
    resume: int = 0  # incomplete: where the unfinished pair starts (see parse_more)

    def extend(self, more: ParsedDict) -> None:
        """Take the pairs a continuation read (parse_more) after these."""
        self.values.update(more.values)
        self.raw_nonfinite.update(more.raw_nonfinite)
        self.abridged |= more.abridged
        self.complete, self.error = more.complete, more.error


class _Incomplete(Exception):
    """The text ended inside a value: wait for more (a wrapped or cut line)."""


class _Bad(Exception):
    """A token that is not a value we understand."""


class _TooDeep(_Bad):
    """A value nested past _MAX_DEPTH: _pair keeps its text instead (no metric is nested)."""


def parse_number(token: str) -> int | float:
    """Int when the token is integral text, float otherwise (full precision via repr).

    An int too long for a float64 column reads as a float instead: ``float()`` has no digit
    limit and gives ±inf past 1.8e308 (the caller marks it non-finite), where ``int()`` would
    stop at Python's 4,300-digit limit and the store could not hold the result anyway.
    """
    digits = token.lstrip("+-")
    if digits.isdecimal() and len(digits) <= _INT_DIGITS:
        return int(token)
    return float(token)


def raw_token(token: str) -> str:
    """A non-finite value's text as logged, abbreviated when it is absurdly long."""
    return token if len(token) <= _TOKEN_MAX else token[:_TOKEN_MAX] + "\u2026"


def _is_nonfinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def parse_dict(text: str) -> ParsedDict:
    """Parse ``{...}`` text (starting at the brace); never raises."""
    if _FAST_DICT.fullmatch(text):
        out = ParsedDict()
        for key, tok in _FAST_PAIR.findall(text):
            value = NONFINITE_TOKENS[tok] if tok[-1] in "nf" else parse_number(tok)
            out.values[key] = value
            if _is_nonfinite(value):  # nan / inf, and numbers past float64 (1e999999)
                out.raw_nonfinite[key] = raw_token(tok)
        return out
    return _SlowParser(text).run()


def parse_more(text: str) -> ParsedDict:
    """Continue an incomplete dict: `text` is its unfinished tail (from ParsedDict.resume on)
    plus the text that followed.  Only the pairs in `text` are read and returned (merge them
    with ParsedDict.extend), so a dict wrapped over many lines is read once, not once per line.
    """
    return _SlowParser(text).run(inside=True)


class _SlowParser:
    """A small recursive-descent reader for everything the fast path refuses."""

    __slots__ = ("text", "pos", "out", "token", "depth", "bad")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.out = ParsedDict()
        self.token = ""  # the last number or word read: a non-finite value's raw text
        self.depth = 0  # open lists and calls around the current value
        self.bad = False  # a non-finite number was read inside the current value

    def run(self, inside: bool = False) -> ParsedDict:
        """Read pairs up to the closing brace.  `inside`: the text starts at a pair (the tail a
        continuation re-reads, from ParsedDict.resume), not at the opening brace."""
        out = self.out
        try:
            if not inside:
                self._expect("{")
            while True:
                out.resume = self.pos  # a pair starts here: the point a continuation re-reads from
                self._skip_ws()
                if self._peek() == "}":  # `{}`, `{'a': 1, }`
                    return out
                if self.text.startswith(("...", "\u2026"), self.pos):
                    if self._ellipsis():
                        return out
                elif self._pair():
                    return out
        except _Incomplete:
            out.complete = False
        except _Bad:
            out.complete = False
            out.error = True
        return out

    def _ellipsis(self) -> bool:
        """Abridged by hand (`, ...}` or `…, 'k': v, …}` in pasted logs): every pair before and
        after it is kept.  True when the dict closes right after it."""
        self.out.abridged = True
        self.pos += 3 if self.text[self.pos] == "." else 1
        self._skip_ws()
        ch = self._peek()
        if ch == ",":
            self.pos += 1
            return False
        if ch == "}":
            return True
        if ch in "'\"":
            return False  # `{... 'k': 1`: a fragment whose head was elided, the pairs go on
        raise _Incomplete()  # `... <something>`: keep what was read, the dict is not whole

    def _pair(self) -> bool:
        """One `'key': value` and the comma after it; True when the closing brace follows."""
        key = self._string()
        self._skip_ws()
        self._expect(":")
        self._skip_ws()
        start, self.bad = self.pos, False
        try:
            value = self._value()
        except _TooDeep:
            value = self._deep_text(start)
        end = self.pos
        self._skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] not in ",}":
            raise _Bad(self.text[self.pos])  # `2e}`: the value was not what it seemed
        if self.bad:
            # `nan`, `np.float64(1e999)`: the number; `[nan, inf, 1]`: the value's text
            self.out.raw_nonfinite[key] = raw_token(self.token if _is_nonfinite(value) else self.text[start:end])
        self.out.values[key] = value
        ch = self._peek()
        if ch == ",":
            self.pos += 1
            return False
        if ch == "}":
            return True
        raise _Bad(ch)

    # -- tokens -------------------------------------------------------------
    def _peek(self) -> str:
        if self.pos >= len(self.text):
            raise _Incomplete()
        return self.text[self.pos]

    def _skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def _expect(self, ch: str) -> None:
        if self._peek() != ch:
            raise _Bad(ch)
        self.pos += 1

    def _string(self) -> str:
        """A quoted string; a run without quote or backslash is one regex step, not a loop."""
        quote = self._peek()
        if quote not in "'\"":
            raise _Bad(quote)
        plain = _STRING_RUN[quote]
        text = self.text
        i = self.pos + 1
        buf: list[str] = []
        while True:
            m = plain.match(text, i)
            buf.append(m.group())  # type: ignore[union-attr]
            i = m.end()  # type: ignore[union-attr]
            if i >= len(text):
                raise _Incomplete()
            if text[i] == quote:
                self.pos = i + 1
                return "".join(buf)
            if i + 1 >= len(text):
                raise _Incomplete()  # a backslash at the very end
            buf.append(_unescape(text[i + 1]))
            i += 2

    def _value(self) -> Any:
        ch = self._peek()
        if ch in "'\"":
            return self._string()
        if ch in "[(":
            return self._sequence()
        if ch == "{":
            return self._raw_nested()
        m = _NUMBER.match(self.text, self.pos)
        w = _WORD.match(self.text, self.pos)
        if w and (not m or w.end() > m.end()):
            return self._word(w)
        if m:
            end = m.end()
            if end == len(self.text) or _EXP_TAIL.fullmatch(self.text, end):
                # a number at the very end (`0.00`, `2.1e`, `2.1e-`) may continue on the next line
                raise _Incomplete()
            self.pos = end
            self.token = m.group(0)
            return self._note(parse_number(self.token))
        if ch in "-+." and self.pos + 1 == len(self.text):
            raise _Incomplete()  # a lone sign at the very end
        raise _Bad(ch)

    def _word(self, w: re.Match) -> Any:
        word = w.group(0)
        end = w.end()
        if end == len(self.text):
            raise _Incomplete()
        self.pos = end
        self.token = word
        if word in NONFINITE_TOKENS:
            return self._note(NONFINITE_TOKENS[word])
        if word == "True":
            return True
        if word == "False":
            return False
        if word == "None":
            return None
        if self.text.startswith("(", end):
            return self._call(word)
        raise _Bad(word)

    def _note(self, number: int | float) -> int | float:
        if _is_nonfinite(number):
            self.bad = True
        return number

    def _call(self, name: str) -> Any:
        """``np.float64(0.5)``, ``tensor(0.5, device='cuda:0')``: keep the first argument."""
        self._nest(1)
        self.pos += 1  # "("
        self._skip_ws()
        inner = self._value()
        self._skip_balanced("(", ")", depth=1)
        self._nest(-1)
        return inner

    def _nest(self, step: int) -> None:
        """Bound the recursion: thousands of `[` or `f(` would hit Python's recursion limit."""
        self.depth += step
        if self.depth > _MAX_DEPTH:
            raise _TooDeep("nesting")

    def _deep_text(self, start: int) -> str:
        """The text of the value at `start` that nests too deep, read to the bracket that
        closes its first (quotes skipped, each closer matching its opener): kept as that text,
        as a nested dict is, so the pairs after it are still read (they were lost with it).
        A bracket that closes another, or the text ending first: unreadable, as before."""
        self.pos, self.depth, self.bad = start, 0, False
        text = self.text
        w = _WORD.match(text, start)
        if w:  # `f(...`: the name, then its brackets
            self.pos = w.end()
        want: list[str] = []  # the closers of the brackets open
        while True:
            self.pos = _BRACKETS_RUN.match(text, self.pos).end()  # type: ignore[union-attr]
            if self.pos >= len(text):
                raise _Bad("nesting")
            ch = text[self.pos]
            if ch in "'\"":
                self._skip_quoted(ch)
                continue
            self.pos += 1
            if ch in _CLOSER:
                want.append(_CLOSER[ch])
            elif not want or want.pop() != ch:
                raise _Bad("nesting")
            if not want:
                return text[start : self.pos]

    def _skip_balanced(self, open_ch: str, close_ch: str, depth: int) -> None:
        """Move past the bracket that closes `depth` open ones, ignoring brackets in strings.

        Runs of other characters are one regex step each: a 1 MB `{{{…` or `f(…` costs a few
        milliseconds, not a second of per-character Python."""
        text = self.text
        plain = _BALANCED_RUN[open_ch]
        while depth:
            self.pos = plain.match(text, self.pos).end()  # type: ignore[union-attr]
            if self.pos >= len(text):
                raise _Incomplete()
            ch = text[self.pos]
            if ch in "'\"":
                self._skip_quoted(ch)
            else:
                depth += 1 if ch == open_ch else -1
                self.pos += 1

    def _skip_quoted(self, quote: str) -> None:
        """Move past the string that starts at pos (backslash escapes honoured)."""
        text = self.text
        plain = _STRING_RUN[quote]
        i = self.pos + 1
        while True:
            i = plain.match(text, i).end()  # type: ignore[union-attr]
            if i >= len(text):
                raise _Incomplete()
            if text[i] == quote:
                self.pos = i + 1
                return
            i += 2  # a backslash and the character it escapes
            if i >= len(text):
                raise _Incomplete()

    def _sequence(self) -> list:
        self._nest(1)
        close = "]" if self._peek() == "[" else ")"
        self.pos += 1
        items: list = []
        while True:
            self._skip_ws()
            if self._peek() == close:
                self.pos += 1
                self._nest(-1)
                return items
            run = _NUMBER_RUN.match(self.text, self.pos)
            if run:  # `1, 2.5, 3, …`: all but the last plain number in one regex step
                items.extend(self._note(parse_number(t)) for t in _NUMBER.findall(run.group()))
                self.pos = run.end()
                continue
            items.append(self._value())
            self._skip_ws()
            ch = self._peek()
            if ch == ",":
                self.pos += 1
            elif ch != close:
                raise _Bad(ch)

    def _raw_nested(self) -> str:
        """Nested dicts are kept as their text: no standard metric is nested."""
        start = self.pos
        self.pos += 1  # "{"
        self._skip_balanced("{", "}", depth=1)
        return self.text[start : self.pos]


def _unescape(ch: str) -> str:
    return {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}.get(ch, ch)
