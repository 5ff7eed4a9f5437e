"""The reduction ops' codes every kernel backend takes (numba CPU, CuPy, Numba-CUDA): plain integers, so
that the dispatch can name them without loading any backend."""

SUM, MAX, MIN, PROD = 0, 1, 2, 3
OPCODES = {"sum": SUM, "max": MAX, "min": MIN, "prod": PROD}
