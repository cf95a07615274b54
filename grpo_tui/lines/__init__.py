"""Reading: log lines -> metric records and events (pure)."""
