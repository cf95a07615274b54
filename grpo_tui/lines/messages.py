"""Continuations and messages: a wrapped record or traceback joined across lines, and what a
message says (a metric record, an event, a launch line, another framework's line), read on the
parser's state (ParserBase).  LineParser (parse.py) feeds lines to these."""

from __future__ import annotations

import re
from typing import Any

from .anatomy import ParserBase
from .formats import (
    COUNTED,
    MEGATRON_ANCHOR,
    TABLE_START,
    VERL_END,
    OtherRecord,
    parse_json,
    parse_megatron,
    parse_prime_rl,
    parse_table_row,
    parse_trl,
    parse_verl,
    table_header,
    table_rule,
    time_text,
)
from .launch import ARG_DUMP_NAMES, parse_launch_flags
from .patterns import (
    _ARG_DUMP,
    _CKPT,
    _DATE_START,
    _ELIDED,
    _EVAL_SKIPPED,
    _EXC_LINE,
    _FT_FIELD,
    _JOB,
    _METRIC_ANY,
    _METRIC_MSG,
    _OOM,
    _PENDING_MAX,
    _RECOVERED,
    _RETRY,
    _TB_GLUE,
    MAX_NAMES,
    _event_anchor,
    _fast_ts,
    _Line,
    _new_skipped,
    _Pending,
    _source_key,
)
from .records import Event, Item, MetricRecord, bounded_int
from .values import ParsedDict, parse_dict, parse_more


class MessageReader(ParserBase):
    """Joining continuations and reading messages (the part of LineParser that makes items)."""

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
            if pend.size <= _PENDING_MAX:  # past the bound the lines still count, unkept
                lines = ev.lines
                if not isinstance(lines, list):  # (the shared empty tuple)
                    lines = ev.lines = []
                lines.append(text)
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
        if MEGATRON_ANCHOR in msg:  # (Megatron prints its iteration line after a `[date time]` header)
            rec = parse_megatron(msg)
            if rec is not None and self._other_record(rec, pre, line_no, (time_text, ts), out):
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
        """Lines of other formats (no Miles header; formats.py): verl, TRL / ms-swift dicts, JSON
        lines, prime-rl, pasted tables.  Same records, the source names the format."""
        text = pre.text
        if VERL_END in text:  # verl's trainer prints it once, after its last step
            self.counts.event_lines += 1
            self._hand_out(
                Event("train_done", last[0], last[1], line_no, text.strip().lstrip("('")[:200], {"framework": "verl"}),
                out,
            )
            return True
        got = parse_verl(text)
        if got is not None:
            n, metrics, raw = got
            return self._other_record(OtherRecord("rollout", n, metrics, raw, "verl"), pre, line_no, last, out)
        row = self._table_line(text)
        if row is True:
            self.counts.noise += 1  # a table's header or rule row: read, no record
            return True
        rec = row or (parse_trl(text) if "{'" in text else None)
        if rec is None and '{"' in text:
            rec = parse_json(text)
        if rec is None:
            rec = parse_prime_rl(text)
        if rec is None:
            rec = parse_megatron(text)
        if rec is None:
            return False
        return self._other_record(rec, pre, line_no, last, out)

    def _table_line(self, text: str) -> OtherRecord | bool | None:
        """A pasted table's header or rule row (True: remembered), or a row under the header
        read last (its record); None when the line is neither."""
        if not TABLE_START.match(text):
            return None
        names = table_header(text)
        if names is not None:
            self._table = names
            return True
        if self._table is None:
            return None
        if table_rule(text):
            return True
        return parse_table_row(text, self._table)

    def _other_record(self, rec: OtherRecord, pre: _Line, line_no: int, last, out: list[Item]) -> bool:
        kind, n, source = rec.kind, rec.n, rec.source
        time_of, ts = last
        if rec.ts is not None:  # a JSON line's own time
            time_of, ts = time_text(rec.ts), rec.ts
            self._note_time(ts)
        if kind == "end":
            self.counts.event_lines += 1
            self._hand_out(
                Event("train_done", time_of, ts, line_no, pre.text.strip()[:200], {"framework": source, **rec.metrics}),
                out,
            )
            return True
        if n == COUNTED:  # TRL dicts carry no step: the rollout dicts are counted
            self._trl_index += kind == "rollout"
            n = max(0, self._trl_index - 1)
        if n is None:
            self.counts.unreadable += 1  # `step:-1 - …`, `step:99999999999999999999 - …`
            return True
        metrics = self._capped(rec.metrics, rec.raw)
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
                time=time_of,
                ts=ts,
                proc=source,
                source=source,
                actor=pre.actor,
                line_no=line_no,
                nonfinite=rec.raw,
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
            e.lines = [msg]
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
        if "W&B logs will be stored in" in msg:
            # (Miles' wandb_utils: "W&B logs will be stored in: DIR" - the offline runs `grpo-tui DIR` reads)
            where = msg.split("W&B logs will be stored in", 1)[1].strip(" :.\t")
            return ev("wandb", dir=where) if where else ev("wandb")
        if ("W&B" in msg and "mode enabled" in msg) or stripped.startswith("wandb:"):
            return ev("wandb")
        if "Saving tensorboard log to" in msg:
            # (Miles' tensorboard_utils: "Saving tensorboard log to DIR." - the folder `grpo-tui DIR` reads)
            where = msg.split("Saving tensorboard log to", 1)[1].strip().rstrip(".")
            return ev("tensorboard", dir=where) if where else ev("tensorboard")
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
