"""The validation oracle: inputs and exact expected results computed in plain numpy, independently of
the algorithms and kernels they check (nothing here imports fabricprobe.collectives or kernels)."""
