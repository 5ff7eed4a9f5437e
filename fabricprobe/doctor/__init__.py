"""`fabricprobe doctor`: each pair of nodes and every pair within a node measured in at most
N + k rounds of disjoint pairs (every pair of ranks on request), every rank's
share of a ring step timed, and each pair, link and rank compared with its peers (docs/doctor.md)."""
