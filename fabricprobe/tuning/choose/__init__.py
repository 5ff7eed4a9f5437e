"""Choosing from a tune-sweep: the library's rules (rules.py) and fabricprobe's own algorithms where they
beat the library's best (selection.py)."""
