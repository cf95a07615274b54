"""Judging: signals, ranges, rules, the health engine, calibration (pure)."""
