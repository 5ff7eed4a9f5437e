"""Building blocks the algorithm files share: block partitions and scratch buffers (common), ring,
binomial and recursive halving/doubling steps with MPICH's fold, and the sparse state and its exchanges.
None of these registers an algorithm."""
