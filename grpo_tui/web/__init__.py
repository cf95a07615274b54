"""`grpo-tui serve`: the dashboard in a browser through textual-serve (extra `web`).

Only grpo_tui.commands.serve_cmd imports this package, and only after the `web` extra is found.
"""
