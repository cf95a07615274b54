"""The Textual dashboard and the runs overview. Only this package imports Textual (launch.py lazily)."""
