"""fabricprobe's ReFrame test library (the `reframe` extra): the check a site adds to the regression
suite it already runs, as it runs OMB through ReFrame's hpctestlib (docs/reframe.md).

A site's ReFrame configuration adds two lines:

    from fabricprobe.reframe import CHECKS
    ...  'general': [{'check_search_path': [CHECKS]}]

and runs `reframe -r -S references_file=GOOD.json` with the references a good run gave
(`fabricprobe report GOOD.h5 --format reframe-references -o GOOD.json`).
"""

from __future__ import annotations

from pathlib import Path

CHECKS = str(Path(__file__).parent / "checks")

__all__ = ["CHECKS"]
