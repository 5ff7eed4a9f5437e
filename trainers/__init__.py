"""Minimal, real data-parallel and model-parallel trainers on fabricprobe's collectives (numpy).
One trainer per file; data, model, timing and results are shared. `fabricprobe train NAME` runs them."""

TRAINERS = ("dp_sgd", "easgd", "sparse_dp", "hybrid")
