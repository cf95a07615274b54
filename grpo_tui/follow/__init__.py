"""Following: a growing file or stdin -> batches of complete lines; replay by log time."""
