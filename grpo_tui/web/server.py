"""textual-serve's Server with the guards `grpo-tui serve` promises (issue #14).

- token: when set, every request (page, static files, websocket, downloads) must carry it, as
  `?token=` on the page URL (the page then sets a same-site cookie for its own assets) or in the
  websocket path `/ws/<token>`; otherwise 403.
- bound to loopback: requests whose Host is not a loopback name are refused (a web page using DNS
  rebinding can't reach the dashboard), and so is a websocket opened by a page of another origin.
- session cap: every browser tab runs one dashboard process; past `max_sessions` the page answers
  503 and the websocket closes with a reason the page shows.
- no files: the server writes nothing (no log file, no debug output); sessions are stopped (quit,
  then killed after a grace period) when the websocket closes and when the server stops.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import signal
import sys
from collections.abc import Callable
from urllib.parse import quote, urlsplit

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from .hosts import is_loopback, url_host
from .page import render

log = logging.getLogger("grpo-tui.serve")

STOP_GRACE_S = 5.0
TRY_AGAIN_LATER = 1013  # websocket close code: the server is full
INTERNAL_ERROR = 1011


class GuardedServer(Server):
    """Serve one command per browser tab, with a token, a loopback Host check and a session cap."""

    def __init__(
        self,
        command: str,
        *,
        host: str,
        port: int,
        token: str | None,
        max_sessions: int,
        title: str,
        out: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.token = token or None
        self.max_sessions = max_sessions
        self.loopback = is_loopback(host)
        self.active = 0
        self.services: set[AppService] = set()
        self.on_listening = out
        self.bound_port = port

    # --- guards --------------------------------------------------------------------------

    @property
    def cookie_name(self) -> str:
        return f"grpo_tui_token_{self.bound_port}"

    def _token_ok(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        want = self.token.encode()
        for given in (
            request.query.get("token"),
            request.match_info.get("token"),
            request.cookies.get(self.cookie_name),
        ):
            if given is not None and hmac.compare_digest(given.encode(), want):
                return True
        return False

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        if self.loopback:
            host = (urlsplit(f"//{request.host}").hostname or "") if request.host else ""
            if not is_loopback(host):
                self._refused(request, f"Host {request.host!r} is not this machine's loopback")
                raise web.HTTPForbidden(
                    text=f"grpo-tui serve: this server answers on {url_host(self.host)} only; the host "
                    f"{request.host!r} was not given with --host.\n"
                )
        if not self._token_ok(request):
            self._refused(request, "no or wrong token")
            raise web.HTTPForbidden(
                text="grpo-tui serve: this server needs its token: open the URL that `grpo-tui serve` "
                "printed (it ends in ?token=...).\n"
            )
        return await handler(request)

    def _refused(self, request: web.Request, why: str) -> None:
        print(
            f"grpo-tui serve: refused {request.method} {request.path} from {request.remote}: {why}",
            file=sys.stderr,
            flush=True,
        )

    def _full_message(self) -> str:
        return (
            f"All {self.max_sessions} dashboard sessions are in use (--max-sessions "
            f"{self.max_sessions}): close a dashboard tab, then retry."
        )

    # --- routes --------------------------------------------------------------------------

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/ws/{token}", self.handle_websocket, name="websocket_token"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
            ]
        )
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if self.active >= self.max_sessions:
            self._refused(request, f"{self.active} sessions open (--max-sessions {self.max_sessions})")
            raise web.HTTPServiceUnavailable(text=f"grpo-tui serve: {self._full_message()}\n")
        ws_path = "/ws" if self.token is None else "/ws/" + quote(self.token, safe="")
        scheme = "wss" if request.scheme == "https" else "ws"
        page = render(
            title=self.title,
            static_url="/static/",
            ws_url=f"{scheme}://{request.host}{ws_path}",
            font_size=to_int(request.query.get("fontsize", "16"), 16),
        )
        resp = web.Response(text=page, content_type="text/html")
        resp.headers["Cache-Control"] = "no-store"
        resp.headers["Referrer-Policy"] = "no-referrer"
        if self.token is not None:
            resp.set_cookie(self.cookie_name, self.token, httponly=True, samesite="Strict", path="/")
        return resp

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.host:
            self._refused(request, f"websocket from another origin ({origin})")
            raise web.HTTPForbidden(text="grpo-tui serve: websocket from another origin\n")
        websocket = web.WebSocketResponse(heartbeat=15)
        if self.active >= self.max_sessions:
            self._refused(request, f"{self.active} sessions open (--max-sessions {self.max_sessions})")
            await websocket.prepare(request)
            await websocket.close(code=TRY_AGAIN_LATER, message=self._full_message().encode()[:120])
            return websocket
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        self.active += 1
        service: AppService | None = None
        reader: asyncio.Task | None = None
        try:
            await websocket.prepare(request)

            # `exec`: the shell textual-serve starts becomes the dashboard, so the process it
            # stops (quit, then kill) is the dashboard itself, never a shell left above it.
            async def close() -> None:  # (AppService awaits None; aiohttp's close gives a bool)
                await websocket.close()

            service = AppService(
                "exec " + self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=close,
                download_manager=self.download_manager,
                debug=False,
            )
            self.services.add(service)
            await service.start(width, height)
            reader = asyncio.create_task(self._process_messages(websocket, service))
            assert service._task is not None
            await asyncio.wait({reader, service._task}, return_when=asyncio.FIRST_COMPLETED)
            if not reader.done():  # the dashboard ended by itself (q, or it failed)
                proc = service._process
                code = proc.returncode if proc is not None else None
                if code is None and proc is not None:
                    try:
                        code = await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
                    except TimeoutError:
                        code = None
                if code not in (0, None):
                    await websocket.close(
                        code=INTERNAL_ERROR,
                        message=f"The dashboard exited with code {code}; the serve terminal shows why.".encode()[:120],
                    )
                else:
                    await websocket.close()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # never let one session take the server down
            log.exception(error)
        finally:
            if reader is not None and not reader.done():
                reader.cancel()
            if service is not None:
                await self._stop_service(service)
            self.active -= 1
        return websocket

    async def _stop_service(self, service: AppService) -> None:
        """Ask the dashboard to quit; kill it if it has not gone after STOP_GRACE_S."""
        self.services.discard(service)
        proc = service._process
        if proc is not None and proc.returncode is None:
            try:
                await service.send_meta({"type": "quit"})
                await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
            except (TimeoutError, ConnectionError, RuntimeError):
                pass
            if proc.returncode is None:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
                await proc.wait()
        task, service._task = service._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, STOP_GRACE_S)
            except (TimeoutError, asyncio.CancelledError):
                pass

    # --- run -----------------------------------------------------------------------------

    async def run_async(self) -> None:
        """Listen, tell `on_listening` the bound port, run until SIGINT/SIGTERM, stop every session."""
        app = await self._make_app()
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self.bound_port = runner.addresses[0][1] if runner.addresses else self.port
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        if self.on_listening is not None:
            self.on_listening(self.bound_port)
        try:
            await stop.wait()
        finally:
            await asyncio.gather(*(self._stop_service(s) for s in list(self.services)), return_exceptions=True)
            await runner.cleanup()

    def serve(self, debug: bool = False) -> None:
        asyncio.run(self.run_async())
