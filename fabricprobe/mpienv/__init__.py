"""The MPI environment a run measures in: initialisation at an explicit thread level, the launcher's
view before MPI starts, the library's identity, topology, datatypes, GPUs, and the provenance every run
records."""
