"""`fabricprobe doctor`: every pair of ranks measured in N−1 rounds of disjoint pairs, every rank's
share of a ring step timed, and each pair, link and rank compared with its peers (docs/doctor.md)."""
