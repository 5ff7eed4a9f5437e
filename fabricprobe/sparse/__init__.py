"""Sparse vectors and what the sparse allreduce family needs around them: the wire format,
traffic accounting, reference results, and error feedback."""
