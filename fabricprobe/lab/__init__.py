"""The fabric lab: emulated hosts (network namespaces) joined by rate-limited links on one machine,
so MPI runs across "nodes" over TCP exactly as on a cluster. config: what a lab is; network: make and
remove it; state: what `lab up` leaves for `run`, `status` and `down`; launch: the mpiexec line."""
