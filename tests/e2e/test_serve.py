"""`grpo-tui serve` (issue #14): the dashboard in headless Chromium, and every refusal path.

The server runs as a real subprocess (`python -m grpo_tui serve ... --port 0`) in the log's folder,
so any file it wrote there would show; it is always stopped (SIGTERM, then SIGKILL of its own
process group) when a test ends. Only 127.0.0.1 is ever connected to.

Browser: Debian's `chromium` driven by Playwright (`executable_path`, no browser download). The
test reads what xterm.js holds on screen (a test-only hook on textual.js's terminal) and checks a
1280x800 screenshot. Outside CI a missing browser, Playwright or `web` extra skips with its name;
with CI set they fail instead (.ci/run installs them).

`GRPO_TUI_SERVE_SCREENSHOT=docs/serve-1280x800.png pytest tests/e2e/test_serve.py -k browser` writes
the README's screenshot.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from grpo_tui import cli
from grpo_tui.web.serve import MISSING_EXTRA, dashboard_command

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "sample_logs" / "gap-jump.log"
IN_CI = bool(os.environ.get("CI"))
START_S = 30.0  # server listening
APP_S = 60.0  # one dashboard process up and drawn (2 shared cores)


def _need(ok: bool, what: str) -> None:
    """Skip naming what is missing; in CI (CI set) fail instead: CI must install it."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"{what} is missing in CI (.ci/run installs it)")
    pytest.skip(f"{what} is not installed")


def _need_web() -> None:
    _need(
        importlib.util.find_spec("textual_serve") is not None and importlib.util.find_spec("aiohttp") is not None,
        "the `web` extra (pip install -e '.[web]')",
    )


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    _need(exe is not None, "Debian's chromium browser (apt-get install chromium)")
    _need(importlib.util.find_spec("playwright") is not None, "Playwright (pip install -e '.[web-test]')")
    return exe  # type: ignore[return-value]


# --- the server as a subprocess ---------------------------------------------------------------


class Served:
    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.out: list[str] = []
        self.err: list[str] = []
        self._lines: queue.Queue = queue.Queue()
        for stream, sink in ((proc.stdout, self.out), (proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    def _pump(self, stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)
            self._lines.put(line)

    def wait_url(self) -> str:
        end = time.monotonic() + START_S
        while time.monotonic() < end:
            out = "".join(self.out)
            m = re.search(r"grpo-tui serve: (http://\S+)", out)
            if m and "Ctrl+C stops the server" in out:  # the last line it prints at start
                return m.group(1)
            if self.proc.poll() is not None:
                break
            try:
                self._lines.get(timeout=0.1)
            except queue.Empty:
                pass
        raise AssertionError(f"serve did not start: rc={self.proc.poll()} out={self.out} err={self.err}")

    @property
    def port(self) -> int:
        return int(re.search(r":(\d+)/", self.wait_url()).group(1))

    @property
    def token(self) -> str | None:
        m = re.search(r"\?token=(\S+)", self.wait_url())
        return m.group(1) if m else None

    def local(self, path: str = "/") -> str:
        """The URL on 127.0.0.1 (whatever the server was bound to)."""
        return f"http://127.0.0.1:{self.port}{path}"

    def stderr(self, wait_for: str = "") -> str:
        """Its stderr so far; with `wait_for`, once that text arrived (a reader thread lags a little)."""
        end = time.monotonic() + 10
        while wait_for not in "".join(self.err) and time.monotonic() < end:
            time.sleep(0.05)
        return "".join(self.err)


@contextmanager
def serve(*args: str, cwd: Path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "grpo_tui", "serve", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        bufsize=1,
        start_new_session=True,
    )
    served = Served(proc)
    try:
        served.wait_url()
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        try:  # its dashboards too, whatever happened
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(timeout=10)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(LOG, d / LOG.name)
    return d


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def _listen_addresses(port: int) -> set[str]:
    """Local addresses of LISTEN sockets on `port`, from /proc/net/tcp{,6} (no connection made)."""
    found: set[str] = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            addr, p = f[1].split(":")
            if int(p, 16) == port and f[3] == "0A":
                if len(addr) == 8:
                    found.add(socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(addr, 16))))
                else:
                    raw = b"".join(struct.pack("<I", int(addr[i : i + 8], 16)) for i in range(0, 32, 8))
                    found.add(socket.inet_ntop(socket.AF_INET6, raw))
    return found


def _http(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace"), dict(e.headers)


# --- the command line -------------------------------------------------------------------------


def test_command_quotes_every_path():
    nasty = "/tmp/x/it's $(touch pwned); `id` -v --theme.log"
    cmd = dashboard_command([nasty, "-rel.log"], theme="light", ranges="r.toml", python="/v env/bin/python")
    assert shlex.split(cmd) == [
        "/v env/bin/python",
        "-m",
        "grpo_tui",
        nasty,
        os.path.abspath("-rel.log"),
        "--theme",
        "light",
        "--ranges",
        os.path.abspath("r.toml"),
        "--no-config",
    ]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["serve", "/no/such.log"], "/no/such.log: no such file"),
        (["serve", str(LOG), "--host", "0.0.0.0", "--token", ""], "needs a token"),
        (["serve", str(LOG), "--token", "a b"], "--token"),
        (["serve", str(LOG), "--port", "70000"], "--port"),
        (["serve", str(LOG), "--max-sessions", "0"], "--max-sessions"),
        (["serve"], "PATH"),
    ],
)
def test_bad_arguments_are_one_line(argv, needle, capsys):
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc in (1, 2) and needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_extra_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textual_serve", None)  # import textual_serve -> ImportError
    assert cli.main(["serve", str(LOG)]) == 1
    assert MISSING_EXTRA in capsys.readouterr().err


def test_port_in_use_is_one_line(capsys):
    _need_web()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        rc = cli.main(["serve", str(LOG), "--port", str(s.getsockname()[1])])
    err = capsys.readouterr().err
    assert rc == 1 and "pick another --port" in err and "Traceback" not in err


# --- refusals (HTTP and websocket, no browser) -----------------------------------------------


async def _first_frame(ws, timeout: float = APP_S, until: bytes | None = None) -> bytes:
    """The session's output until it holds `until` (or 2000 bytes when no marker is asked):
    the first paint may come before the log's data, so a marker waits for the data's frame."""
    import aiohttp

    end = time.monotonic() + timeout
    got = b""
    while (until not in got) if until is not None else (len(got) < 2000):
        msg = await ws.receive(timeout=max(0.1, end - time.monotonic()))
        if msg.type == aiohttp.WSMsgType.BINARY:
            got += msg.data
        elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
            raise AssertionError(f"session closed before the dashboard drew: {ws.close_code} {msg.extra}")
    return got


async def test_default_is_loopback_only_and_refuses_other_hosts_and_origins(run_dir):
    _need_web()
    import aiohttp

    before = _listing(run_dir)
    with serve(LOG.name, "--port", "0", cwd=run_dir) as s:
        out = "".join(s.out)
        assert s.wait_url() == f"http://127.0.0.1:{s.port}/" and s.token is None
        assert f"ssh -L {s.port}:localhost:{s.port} " in out
        assert _listen_addresses(s.port) <= {"127.0.0.1"}
        status, body, _ = _http(s.local())
        assert status == 200 and "textual-terminal" in body and "googleapis" not in body
        # a name that is not loopback (DNS rebinding): refused, and says why
        status, body, _ = _http(s.local(), {"Host": f"evil.example:{s.port}"})
        assert status == 403 and "--host" in body
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as exc:
                await http.ws_connect(s.local("/ws"), headers={"Origin": "http://evil.example"})
            assert exc.value.status == 403
            async with http.ws_connect(
                s.local("/ws?width=100&height=30"), headers={"Origin": f"http://127.0.0.1:{s.port}"}
            ) as ws:
                await ws.send_json(["stdin", "q"])  # same origin: a session starts (and quits)
        assert "refused" in s.stderr("refused")
    assert _listing(run_dir) == before


async def test_bound_elsewhere_needs_the_token(run_dir):
    _need_web()
    import aiohttp

    before = _listing(run_dir)
    with serve(LOG.name, "--host", "0.0.0.0", "--port", "0", cwd=run_dir) as s:
        token = s.token
        assert token and len(token) >= 16
        assert "anyone who can reach this port" in s.stderr("WARNING")
        for path in ("/", "/?token=wrong", "/static/js/textual.js", "/download/x"):
            status, body, _ = _http(s.local(path))
            assert status == 403 and "token" in body, path
        status, body, headers = _http(s.local(f"/?token={token}"))
        assert status == 200 and f"/ws/{token}" in body
        cookie = headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        assert _http(s.local("/static/js/textual.js"), {"Cookie": cookie})[0] == 200
        async with aiohttp.ClientSession() as http:
            for ws_path in ("/ws", "/ws/wrong"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as exc:
                    await http.ws_connect(s.local(ws_path))
                assert exc.value.status == 403
            async with http.ws_connect(s.local(f"/ws/{token}?width=100&height=30")):
                pass  # accepted; closing it stops its dashboard
    assert _listing(run_dir) == before


async def test_too_many_sessions_are_refused_with_a_reason(tmp_path):
    _need_web()
    import aiohttp

    d = tmp_path / "run"
    d.mkdir()
    name = "it's $(touch pwned); `touch pwned2` x.log"  # reaches the shell only quoted
    shutil.copy(LOG, d / name)
    before = _listing(tmp_path)
    with serve(name, "--port", "0", "--max-sessions", "1", cwd=d) as s:
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(s.local("/ws?width=120&height=40")) as first:
                screen = await _first_frame(first, until=b"crit")
                assert b"crit" in screen  # the dashboard of that file is running
                kids = subprocess.run(
                    ["ps", "-o", "args=", "--ppid", str(s.proc.pid)], capture_output=True, text=True
                ).stdout.splitlines()
                assert len(kids) == 1 and kids[0].split()[:3] == [sys.executable, "-m", "grpo_tui"], kids
                async with http.ws_connect(s.local("/ws")) as second:
                    msg = await second.receive(timeout=APP_S)
                    assert msg.type == aiohttp.WSMsgType.CLOSE and second.close_code == 1013
                    assert "--max-sessions 1" in msg.extra
                status, body, _ = _http(s.local())
                assert status == 503 and "--max-sessions 1" in body and "close a dashboard tab" in body
                await first.send_json(["stdin", "q"])
                await asyncio.wait_for(first.receive(), APP_S)
            end = time.monotonic() + APP_S  # the slot is free again
            while _http(s.local())[0] != 200:
                assert time.monotonic() < end, "the session slot was never freed"
                await asyncio.sleep(0.2)
        assert "--max-sessions 1" in s.stderr("refused")
    assert _listing(tmp_path) == before  # no pwned file, nothing written


async def test_a_dashboard_that_fails_closes_its_tab_with_the_reason(tmp_path):
    _need_web()
    import aiohttp

    script = (
        "import sys; from grpo_tui.web.server import GuardedServer; "
        "GuardedServer(sys.argv[1], host='127.0.0.1', port=0, token=None, max_sessions=1, title='t', "
        "out=lambda p: print(f'grpo-tui serve: http://127.0.0.1:{p}/\\nCtrl+C stops the server.', flush=True))"
        ".serve()"
    )
    failing = f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(3)'"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, failing],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        bufsize=1,
        start_new_session=True,
    )
    s = Served(proc)
    try:
        async with aiohttp.ClientSession() as http:
            end = time.monotonic() + APP_S
            failed = 0
            while failed < 2:  # twice: its slot is freed after it
                async with http.ws_connect(s.local("/ws")) as ws:
                    msg = await ws.receive(timeout=APP_S)
                assert msg.type == aiohttp.WSMsgType.CLOSE, msg
                if ws.close_code == 1013:  # the first one's slot is being freed
                    assert failed == 1 and time.monotonic() < end, "the failed session's slot stays taken"
                    await asyncio.sleep(0.1)
                    continue
                assert ws.close_code == 1011 and "exited with code 3" in msg.extra
                failed += 1
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait(timeout=10)


# --- the browser ------------------------------------------------------------------------------

HOOK = "this.terminal=new v.Terminal("
SCREEN_JS = """() => {
  const t = window.__grpoTerm;
  if (!t || !document.body.classList.contains('-first-byte')) return '';
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < t.rows; i++) { const l = b.getLine(b.viewportY + i); rows.push(l ? l.translateToString(true) : ''); }
  return rows.join('\\n');
}"""


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_browser_dashboard_keys_and_screenshot(run_dir, tmp_path):
    _need_web()
    exe = _chromium()
    from playwright.sync_api import sync_playwright

    before = _listing(run_dir)
    with serve(LOG.name, "--port", "0", cwd=run_dir) as s, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=exe,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            elsewhere: list[str] = []
            hooked: list[bool] = []

            def route(r):
                url = r.request.url
                if not url.startswith((f"http://127.0.0.1:{s.port}/", f"ws://127.0.0.1:{s.port}/")):
                    elsewhere.append(url)  # only ever 127.0.0.1
                    return r.abort()
                if url.split("?")[0].endswith("/static/js/textual.js"):
                    resp = r.fetch()
                    body = resp.text()
                    hooked.append(HOOK in body)
                    return r.fulfill(
                        response=resp, body=body.replace(HOOK, "this.terminal=window.__grpoTerm=new v.Terminal(", 1)
                    )
                return r.continue_()

            ctx.route("**/*", route)
            page = ctx.new_page()
            page.set_default_timeout(APP_S * 1000)

            def screen() -> str:
                return page.evaluate(SCREEN_JS) or ""

            def wait_screen(cond, what: str) -> str:
                end = time.monotonic() + APP_S
                while True:
                    text = screen()
                    if cond(text):
                        return text
                    assert time.monotonic() < end, f"timed out waiting for {what}; screen:\n{text}"
                    page.wait_for_timeout(100)

            page.goto(s.local("/?fontsize=13"))  # 13 px: 160+ columns, the wide layout with its chart
            assert hooked == [True], "textual.js changed: update HOOK in this test"
            # the whole frame, header included, read once the log is judged: a frame can be read while
            # xterm.js is still writing its rows (CI once read the panels before the header row)
            text = wait_screen(
                lambda t: "q quit" in t and "log-prob gap" in t and "finished" in t.split("\n")[0],
                "the judged dashboard",
            )
            first = text.splitlines()[0]
            assert "crit" in first and "gap-jump.log" in first and "finished" in first
            for label in ("reward", "answer length", "KL to engine", "zero-std"):
                assert label in text
            # a stable frame for the screenshot (the last rows settle after the first paint)
            end = time.monotonic() + 10
            while time.monotonic() < end:
                page.wait_for_timeout(500)
                again = screen()
                if again == text:
                    break
                text = again
            shot = tmp_path / "serve.png"
            page.screenshot(path=str(shot))
            assert _png_size(shot) == (1280, 800) and shot.stat().st_size > 20_000
            if os.environ.get("GRPO_TUI_SERVE_SCREENSHOT"):
                shutil.copy(shot, os.environ["GRPO_TUI_SERVE_SCREENSHOT"])

            page.focus(".xterm-helper-textarea")
            page.keyboard.press("?")
            wait_screen(lambda t: "grpo-tui keys" in t and "acknowledge alert" in t, "the help screen")
            page.keyboard.press("?")
            wait_screen(lambda t: "grpo-tui keys" not in t, "the help screen to close")
            page.keyboard.press("c")
            wait_screen(lambda t: "close chart" in t and "mean5" in t and "rollout" in t, "the chart")
            page.keyboard.press("q")
            page.wait_for_selector("body.-closed", state="attached")
            assert (
                page.evaluate("() => document.querySelector('.closed-dialog .message').textContent") == "Session ended."
            )
            assert elsewhere == [], f"the page asked another host: {elsewhere}"
        finally:
            browser.close()
        assert s.proc.poll() is None  # the server outlives its sessions
    assert _listing(run_dir) == before
