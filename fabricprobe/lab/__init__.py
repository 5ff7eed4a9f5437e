"""The fabric lab: emulated hosts (network namespaces) joined by rate-limited links on one machine,
so MPI runs across "nodes" over TCP exactly as on a cluster. config: what a lab is; network: make and
remove it; state: what `lab up` leaves for `run`, `status` and `down`; launch: the mpiexec line."""

ENV_VAR = "FABRICPROBE_LAB"  # set for every rank a lab launches: the path of its lab.json (state.py)
