"""`grpo-tui serve`: the dashboard in a browser through textual-serve (extra `web`).

web.serve checks the flags with no third-party import; web.server loads only once the extra is found.
"""
