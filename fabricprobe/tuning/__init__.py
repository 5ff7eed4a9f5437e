"""Tuning: measure the MPI library's own algorithms one by one, choose the fastest per collective,
communicator size and message size, write the library's tuning files, and prove they apply."""

# fabricprobe's collective names -> what each library calls them
COLLECTIVES = ("allreduce", "bcast", "reduce", "allgather", "reduce_scatter", "alltoall")
