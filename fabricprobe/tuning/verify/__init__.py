"""Proving a tuning file applies: fingerprints of which algorithm ran (fingerprint.py, launching
probe.py) compared, rule by rule, on both sides of every boundary (checks.py)."""
