"""fabricprobe: measure an HPC fabric and tune MPI collectives."""

__version__ = "0.1.0"
