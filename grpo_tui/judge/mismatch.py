"""BulkMismatch on its own: the pipeline catches it whether or not it judges, and a read that is
not judged (export) imports nothing else of judge/ (nor numpy, which the rest brings)."""


class BulkMismatch(Exception):
    """The store changed under a recorded rollout: judge the input rollout by rollout."""
