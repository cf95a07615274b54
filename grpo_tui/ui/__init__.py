"""The Textual dashboard. Only this package (and commands/dashboard_cmd.py) imports Textual."""
