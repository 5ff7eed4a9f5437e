"""Sparse vectors and what the sparse allreduce family needs around them: the wire format, traffic
accounting and error feedback (reference results live in fabricprobe.oracle)."""
