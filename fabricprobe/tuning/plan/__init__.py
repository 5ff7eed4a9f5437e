"""What to measure and how to force it: each library's algorithms and the way to force one, in one file
per library (openmpi.py, mpich.py, intel.py; library.py their common part, libraries.py the one in
use), the variants a tune-sweep measures (variants.py) and fabricprobe's own candidates (own.py)."""
