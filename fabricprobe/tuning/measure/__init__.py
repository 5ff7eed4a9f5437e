"""tune-sweep's measurements: launching jobs (launch.py), the whole tune-sweep (sweep.py), and tune
--verify's before/after re-measurement (before_after.py)."""
