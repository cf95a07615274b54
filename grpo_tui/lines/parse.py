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
files.read_blocks reads blocks of complete lines as bytes, feed_block hands a block to
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

from .messages import MessageReader
from .native import (
    _H_COUNT,
    _HEAD_CKPT,
    _HEAD_FT,
    _HEAD_METRIC,
    _HEAD_OTHER,
    _HEAD_QUIET,
    _REJOIN_PARTS,
    ready_item,
    ready_items,
    unpack,
)
from .patterns import (
    _CONTROL_NO_ESC,
    MAX_LINE,
    MAX_NAMES,
    ParseCounts,
    _fast_ts,
    _Line,
    _new_skipped,
    _pid_of,
    _source_key,
    is_candidate,
)
from .records import Event, Item, MetricRecord


class LineParser(MessageReader):
    """Feed physical lines in order; get records and events back.

    Incremental by design: the live follower feeds a few lines at a time, ``check`` feeds
    a whole file.  ``flush()`` closes what is still open (end of file, or the caller's
    choice while idle).
    """

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
        bytes (a view of a reused buffer, files.read_blocks) is kept by nothing once this
        returns: the lines read lazily from it are read first.  `scanned`: what `block_scan`
        (_scan.scan_raw) gave for this very block, or scan_folded's tuple for it
        (files.read_blocks walks the next block in another thread while this one is
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
                    made = len(out)
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
                    if len(out) > made:
                        ready_items(out, made)
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
        key, pid = h[0], h[1]
        c = self.counts
        c.lines += 1
        item = ready_item(h[-1])
        item.line_no = c.lines
        self._line_cut = False
        self._cur_key = key
        if self._pending is not None:
            self._close_pending(out)
        time, ts = item.time, item.ts
        assert time is not None and ts is not None  # (a ready head is a stamped Miles header)
        self._head_seen(key, pid, time, ts)
        self._noise_lazy = None  # _noise_clear (nothing below reads it)
        self._noise.clear()
        if isinstance(item, MetricRecord):
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


def parse_lines(lines) -> tuple[list[Item], ParseCounts]:
    """Convenience for tests and small inputs: parse an iterable of lines completely."""
    p = LineParser()
    items = p.feed_many(lines)
    items.extend(p.flush())
    return items, p.counts
