"""The HTML page of `grpo-tui serve`: textual-serve's terminal page, trimmed for a private server.

Differences from textual-serve's own template: nothing is loaded from another host (its template
pulls a font from a public CDN, which would tell a third party who opens the dashboard); the
monospace font comes from textual-serve's static folder and is loaded before the terminal measures
its cells; when the server closes a session with a reason (too many tabs, the dashboard ended),
the "Session ended" box shows that reason.
"""

from __future__ import annotations

import html

PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{static}css/xterm.css">
<style>
@font-face {{
  font-family: "Roboto Mono";
  src: url("{static}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype");
  font-weight: 100 700;
  font-display: block;
}}
html, body {{ margin: 0; height: 100%; background: #0c181f; }}
.dialog-container {{ position: absolute; width: 100vw; height: 100vh; display: flex;
  align-items: center; justify-content: center; z-index: 10; }}
.intro {{ max-width: 640px; min-height: 120px; padding: 24px 32px; z-index: 20; font: 16px "Roboto Mono", monospace;
  text-align: center; color: rgba(255, 255, 255, 0.95); background-color: #12232d;
  display: flex; flex-direction: column; align-items: center; justify-content: center; }}
body.-first-byte .intro-dialog {{ display: none; }}
.textual-terminal {{ width: 100vw; height: 100vh; opacity: 0; }}
body.-first-byte .textual-terminal {{ opacity: 1; }}
.closed-dialog {{ display: none; background: rgba(12, 24, 31, 0.85); }}
body.-closed .closed-dialog {{ display: flex; }}
button {{ padding: 12px 28px; margin-top: 16px; background-color: #5e0ba7; color: #fff; border: none;
  font: 16px "Roboto Mono", monospace; cursor: pointer; }}
#start {{ display: none; }}
</style>
<script>
// Show why the server closed a session (the close frame's reason) in the "Session ended" box.
(function () {{
  const NativeWebSocket = window.WebSocket;
  function WebSocketWithReason(url, protocols) {{
    const ws = protocols === undefined ? new NativeWebSocket(url) : new NativeWebSocket(url, protocols);
    ws.addEventListener("close", function (event) {{
      if (event.reason) {{
        document.querySelector(".closed-dialog .message").textContent = event.reason;
      }}
    }});
    return ws;
  }}
  WebSocketWithReason.prototype = NativeWebSocket.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) WebSocketWithReason[k] = NativeWebSocket[k];
  window.WebSocket = WebSocketWithReason;
}})();
function refresh() {{ window.location.reload(); }}
</script>
<script src="{static}js/textual.js"></script>
<script>
// textual.js starts the terminal on window.onload; start it once the font is there, so the
// terminal measures its cells with the font it draws with.
(function () {{
  const start = window.onload;
  window.onload = function (event) {{
    const go = function () {{ start(event); }};
    if (document.fonts && document.fonts.load) {{
      document.fonts.load('{font_size}px "Roboto Mono"').then(go, go);
    }} else {{
      go();
    }}
  }};
}})();
</script>
</head>
<body>
<div class="dialog-container intro-dialog"><div class="intro"><div>{heading}</div>
<div>starting the dashboard&hellip;</div><button type="button" id="start" onclick="refresh()">Start</button></div></div>
<div class="dialog-container closed-dialog"><div class="intro">
<div class="message">Session ended.</div>
<button type="button" onclick="refresh()">Open a new session</button></div></div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="{ws_url}" data-font-size="{font_size}"></div>
</body>
</html>
"""


def render(*, title: str, static_url: str, ws_url: str, font_size: int = 16) -> str:
    """The page: `static_url` ends with '/', `ws_url` is the session websocket (ws://host/ws...)."""
    esc = html.escape
    return PAGE.format(
        title=esc(title),
        heading=esc(title),
        static=esc(static_url, quote=True),
        ws_url=esc(ws_url, quote=True),
        font_size=int(font_size),
    )
