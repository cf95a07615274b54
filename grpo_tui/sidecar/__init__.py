"""Readers of the files a run writes besides its console log: TensorBoard event folders, W&B offline runs."""
