"""A local webhook receiver for the notification tests: an http.server thread on 127.0.0.1
that records every POST and answers as told (a list of statuses, or "hang": accept and never
answer).  Tests wait on its condition for events, never on wall-clock thresholds."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, answers: list[int] | str = "ok") -> None:
        self.answers = answers
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        self.connections = 0
        self.cond = threading.Condition()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                with owner.cond:
                    owner.connections += 1
                    owner.cond.notify_all()
                if owner.answers == "hang":
                    owner.release.wait(60)
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner.cond:
                    n = len(owner.posts)
                    owner.posts.append((self.path, dict(self.headers), body))
                    owner.cond.notify_all()
                answers = [200] if owner.answers == "ok" else list(owner.answers)
                code = answers[min(n, len(answers) - 1)]
                text = b"ok" if code < 400 else b"server error"
                self.send_response(code)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait(self, cond, timeout: float = 30.0) -> bool:
        """Until cond(self) holds (a safety bound, not a measured time)."""
        with self.cond:
            return self.cond.wait_for(lambda: cond(self), timeout)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
