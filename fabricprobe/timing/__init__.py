"""The timing layer below the algorithms: loops compiled in the rank that call the MPI C API (native.py,
compiled.py), their Python twins (loops.py), and the one choice of timer for a point (batch.py)."""
