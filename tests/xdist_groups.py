"""How the suite's tests are shared between pytest-xdist's workers (`-n 2 --dist loadgroup`, noxfile.py):
which tests must run on one worker, one after another.

- The files that bring up the fabric lab: its subnet and its Slurm are one per machine.
- A file with a module-scoped fixture (an mpiexec job made once for all its tests: the each-size
  checkers): on two workers each would make it again, and a worker that ran another file's test
  in between would make it again too.
- Any other test goes wherever a worker is free.

xdist's own `loadgroup` reads `xdist_group` marks through `Node._nodeid`, which pytest 9 no longer
uses (the groups were silently ignored), so the scheduler is given here, from the test ids alone."""

from __future__ import annotations

import functools
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

LAB_FILES = {
    "test_lab.py",
    "test_lab_ownership.py",
    "test_coll_path.py",
    "test_mpich_composition.py",
    "test_han_tuning.py",
}
LAB = "lab"


@functools.cache
def _has_module_fixture(path: Path) -> bool:
    try:
        text = path.read_text()
    except OSError:
        return False
    return any(f"scope={q}{s}{q}" in text for q in "\"'" for s in ("module", "class", "package"))


def scope_of(nodeid: str, root: Path) -> str:
    """The unit of work a test belongs to: "lab", its file, or itself."""
    file = nodeid.split("::", 1)[0]
    path = Path(file)
    if path.name in LAB_FILES or "site" in path.parts:
        return LAB
    return file if _has_module_fixture(root / path) else nodeid


class Groups(LoadScopeScheduling):
    """xdist's scheduler by scope, with the scopes above."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid, self.config.rootpath)


class GroupsPlugin:
    def pytest_xdist_make_scheduler(self, config, log):
        if config.getvalue("dist") == "loadgroup":
            return Groups(config, log)
        return None
