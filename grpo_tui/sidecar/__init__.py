"""Sidecars: readers of the files a run writes besides its console log: TensorBoard event folders,
W&B offline runs. Each reader tails its files incrementally and hands back plain columns (tags, steps,
wall times, values); mapping those to the run's metrics and axes is left to the pipeline."""
