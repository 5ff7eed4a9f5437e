"""How the suite's tests are shared between pytest-xdist's workers (`-n 2 --dist loadgroup`, noxfile.py):
which tests must run on one worker, one after another.

- The files that bring up the fabric lab on test_lab.py's subnet, one lab at a time (tests/site/'s
  labs have subnets of their own).
- The tests of a file that use one of its module-scoped fixtures (an mpiexec job made once for all
  of them: the each-size checkers): on two workers each would make it again, and a worker that ran
  another file's test in between would make it again too. The file's other tests go anywhere:
  grouping whole files serialized test_gpudirect.py's 43 launches on one worker, and CI took as long
  on two workers as on one.
- Any other test goes wherever a worker is free.

xdist's own `loadgroup` reads `xdist_group` marks through `Node._nodeid`, which pytest 9 no longer
uses (the groups were silently ignored), so the scheduler is given here, from the test ids alone."""

from __future__ import annotations

import ast
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


SHARED_SCOPES = {"module", "class", "package"}


def _shared_fixture(node: ast.FunctionDef) -> bool:
    """Whether a function is a fixture of module (class, package) scope: @pytest.fixture(scope="module")."""
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and any(
            k.arg == "scope" and isinstance(k.value, ast.Constant) and k.value.value in SHARED_SCOPES
            for k in deco.keywords
        ):
            return True
    return False


def _requests(node: ast.FunctionDef) -> set[str]:
    """The fixtures a function asks for: its arguments and its @pytest.mark.usefixtures names."""
    names = {a.arg for a in node.args.args}
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "usefixtures":
            names |= {a.value for a in deco.args if isinstance(a, ast.Constant)}
    return names


@functools.cache
def _sharing_tests(path: Path) -> frozenset[str]:
    """The test functions of a file that use one of its module-scoped fixtures, directly or through
    another of its fixtures (read from the source: xdist's controller never collects)."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return frozenset()
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    shared = {f.name for f in functions if _shared_fixture(f)}
    changed = True
    while changed:  # a fixture that asks for a shared one shares it too
        users = {f.name for f in functions if not f.name.startswith("test") and _requests(f) & shared}
        changed = not users <= shared
        shared |= users
    return frozenset(f.name for f in functions if f.name.startswith("test") and _requests(f) & shared)


def scope_of(nodeid: str, root: Path) -> str:
    """The unit of work a test belongs to: "lab", its file (with the other tests that share its
    module-scoped job), or itself."""
    file, _, rest = nodeid.partition("::")
    path = Path(file)
    if path.name in LAB_FILES:
        return LAB
    function = rest.split("[", 1)[0].split("::")[-1]
    return file if function in _sharing_tests(root / path) else nodeid


class Groups(LoadScopeScheduling):
    """xdist's scheduler by scope, with the scopes above."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid, self.config.rootpath)


class GroupsPlugin:
    def pytest_xdist_make_scheduler(self, config, log):
        if config.getvalue("dist") == "loadgroup":
            return Groups(config, log)
        return None
