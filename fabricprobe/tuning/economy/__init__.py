"""Tuning for part of the time: the budgeted search (search.py: rounds and model, pure), its launches
(budgeted.py), the search replayed on an exhaustive file (replay.py) and its judge (regret.py;
evaluate.py is `fabricprobe tune-eval`)."""
