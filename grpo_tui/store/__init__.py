"""The store: records -> numpy columns per rollout, segments, events (pure)."""
