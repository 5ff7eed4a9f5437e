"""Tuning: measure the MPI library's own algorithms one by one, choose the fastest per collective,
communicator size and message size, write the library's tuning files, and prove they apply."""

from fabricprobe.specs import TUNABLE as COLLECTIVES  # the collectives whose spec names them for the libraries

__all__ = ["COLLECTIVES"]
