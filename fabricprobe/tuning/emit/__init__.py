"""Writing the choice in each library's own format, one file per library (openmpi.py, mpich.py, intel.py)
and fabricprobe's runtime selection (selection.py); registry.py names the formats and writes them."""
