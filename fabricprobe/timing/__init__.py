"""The timing layer below the algorithms: Numba-compiled loops that call the MPI C API (native.py,
loops.py), their Python twins, and the one choice of timer for a point (batch.py)."""
