"""The architecture, read from the imports: packages are layered top-down (docs/architecture.md) and no
import runs upward or sideways, so there are no package loops; the validation oracle imports nothing of
what it checks; adding an algorithm or a collective touches only its own file and one registry line."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from mpirun import more_ranks_than_cores, run_mpi

ROOT = Path(__file__).resolve().parent.parent

# Top to bottom. A unit may import only from units in lower layers (units of one layer know nothing of
# each other). A unit is a subpackage of fabricprobe, a module at fabricprobe's top, or trainers.
LAYERS = [
    ("entry points", {"fabricprobe", "fabricprobe.__main__"}),  # fabricprobe: the root __init__ (BLAS threads)
    ("command line", {"fabricprobe.cli"}),
    ("ReFrame test library", {"fabricprobe.reframe"}),
    ("applications", {"trainers"}),
    ("public API", {"fabricprobe.tuned"}),
    ("tuning", {"fabricprobe.tuning"}),
    ("fabric doctor", {"fabricprobe.doctor"}),
    ("cost model", {"fabricprobe.costmodel"}),
    ("reports and the sweep engine", {"fabricprobe.report", "fabricprobe.engine"}),
    ("results store", {"fabricprobe.store"}),
    ("algorithms", {"fabricprobe.collectives"}),
    ("collective specs", {"fabricprobe.specs"}),
    ("validation oracle", {"fabricprobe.oracle"}),
    ("sparse vectors", {"fabricprobe.sparse"}),
    ("console", {"fabricprobe.console"}),
    ("MPI environment", {"fabricprobe.mpienv"}),
    ("timing and kernels", {"fabricprobe.timing", "fabricprobe.kernels"}),
    ("memory", {"fabricprobe.memory"}),
    ("fabric lab", {"fabricprobe.lab"}),
    (
        "base",
        {
            "fabricprobe.sizes",
            "fabricprobe.choices",
            "fabricprobe.stats",
            "fabricprobe.inputs",
            "fabricprobe.processes",
            "fabricprobe.interrupts",
            "fabricprobe.text",
        },
    ),
    ("errors and version", {"fabricprobe.errors", "fabricprobe.version"}),
]
LAYER_OF = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}

# Inside a package made of subpackages, the same rule one level down: a part (a subpackage or a module at
# the package's top) imports only from parts in lower layers; the package's own __init__ is the bottom.
SUBLAYERS = {
    "fabricprobe.tuning": [
        ("workflows and the one launch's ranks", {"workflow", "sweep_job", "runtime"}),
        ("budgeted search", {"economy"}),
        ("measurement", {"measure"}),
        ("verification", {"verify"}),
        ("emitters", {"emit"}),
        ("rules", {"choose"}),
        ("library plans", {"plan"}),
        ("the package", {"__init__"}),
    ],
}


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "trainers":
        return "trainers"
    return ".".join(parts[:2])


def _resolves(module: str, root: Path) -> bool:
    base = root / module.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every fabricprobe or trainers module the file imports, at its top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:  # `from pkg import mod` imports pkg.mod
                found.add(f"{node.module}.{a.name}" if _resolves(f"{node.module}.{a.name}", root) else node.module)
    return {m for m in found if m.split(".")[0] in ("fabricprobe", "trainers")}


def _sources(root: Path) -> list[Path]:
    return sorted([*root.glob("fabricprobe/**/*.py"), *root.glob("trainers/**/*.py")])


def edges(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, file) for every import between two units."""
    out = []
    for path in _sources(root):
        here = _unit(_module_name(path, root))
        for target in _imports(path, root):
            there = _unit(target)
            if there != here:
                out.append((here, there, str(path.relative_to(root))))
    return out


def upward(root: Path = ROOT) -> list[str]:
    return [
        f"{file}: {a} ({LAYERS[LAYER_OF[a]][0]}) imports {b} ({LAYERS[LAYER_OF[b]][0]})"
        for a, b, file in edges(root)
        if LAYER_OF[b] <= LAYER_OF[a]
    ]


def _part(package: str, module: str) -> str:
    rest = module[len(package) + 1 :].split(".") if module != package else []
    return rest[0] if rest else "__init__"


def sideways(package: str, root: Path = ROOT) -> list[str]:
    """Imports between parts of `package` (SUBLAYERS) that do not run downward."""
    layer_of = {part: i for i, (_, parts) in enumerate(SUBLAYERS[package]) for part in parts}
    out = []
    for path in sorted(root.glob(package.replace(".", "/") + "/**/*.py")):
        here = _part(package, _module_name(path, root))
        for target in _imports(path, root):
            if target != package and not target.startswith(package + "."):
                continue
            there = _part(package, target)
            if there != here and layer_of.get(there, -1) <= layer_of.get(here, -1):
                out.append(f"{path.relative_to(root)}: {package}.{here} imports {package}.{there}")
    return out


@pytest.mark.parametrize("package", sorted(SUBLAYERS))
def test_every_part_of_a_layered_package_has_a_layer(package):
    folder = ROOT / package.replace(".", "/")
    parts = {
        p.stem if p.is_file() else p.name for p in folder.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    layered = {part for _, group in SUBLAYERS[package] for part in group}
    assert parts == layered, f"SUBLAYERS[{package!r}] and docs/architecture.md: {sorted(parts ^ layered)}"


@pytest.mark.parametrize("package", sorted(SUBLAYERS))
def test_imports_inside_a_layered_package_only_run_downward(package):
    found = sideways(package)
    assert not found, "\n".join(found)


def test_the_sublayer_check_can_fail(tmp_path):
    """A planted import of the budgeted search from the measurement (the loop issue 54 found) is caught."""
    (tmp_path / "fabricprobe" / "tuning" / "measure").mkdir(parents=True)
    (tmp_path / "fabricprobe" / "tuning" / "economy").mkdir()
    (tmp_path / "fabricprobe" / "tuning" / "economy" / "rounds.py").write_text("")
    (tmp_path / "fabricprobe" / "tuning" / "measure" / "job.py").write_text(
        "def run():\n    from fabricprobe.tuning.economy.rounds import run_rounds\n"
    )
    assert sideways("fabricprobe.tuning", tmp_path) == [
        "fabricprobe/tuning/measure/job.py: fabricprobe.tuning.measure imports fabricprobe.tuning.economy"
    ]


def test_every_unit_has_a_layer():
    units = {_unit(_module_name(p)) for p in _sources(ROOT)}
    assert units <= set(LAYER_OF), f"add to LAYERS (and docs/architecture.md): {sorted(units - set(LAYER_OF))}"


def test_imports_only_run_downward():
    found = upward()
    assert not found, "\n".join(found)


def test_the_layering_check_can_fail(tmp_path):
    """A planted upward import (the store reaching into the sweep engine) is caught."""
    (tmp_path / "fabricprobe" / "store").mkdir(parents=True)
    (tmp_path / "fabricprobe" / "engine").mkdir()
    (tmp_path / "fabricprobe" / "engine" / "plan.py").write_text("")
    (tmp_path / "fabricprobe" / "store" / "schema.py").write_text("from fabricprobe.engine.plan import PlannedPoint\n")
    assert upward(tmp_path) == [
        "fabricprobe/store/schema.py: fabricprobe.store (results store) imports "
        "fabricprobe.engine (reports and the sweep engine)"
    ]


def test_the_oracle_imports_nothing_it_checks():
    """Expected results come from numpy and the sparse data types only: not from the algorithms, the kernels
    or the specs that use the oracle."""
    for path in sorted(ROOT.glob("fabricprobe/oracle/*.py")):
        assert _imports(path) <= {"fabricprobe.sparse.vector"}, path


@pytest.mark.mpi
def test_a_new_collective_and_algorithms_need_only_their_own_files(tmp_path):
    """tests/drivers/new_collective.py adds MPI_Gather (a spec and its registry line), a hand-written gather,
    a planted wrong one and a new allreduce with its cost formula, as docs/architecture.md shows; the
    unchanged engine plans, validates, times and stores them, and the cost model and the docs table see
    the new allreduce."""
    n = 3 if more_ranks_than_cores() else 2
    out = run_mpi(
        n, [], python_args=[str(ROOT / "tests" / "drivers" / "new_collective.py"), str(tmp_path / "r.h5")], timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    status = {}
    for collective, algorithm, state, nbytes in report["points"]:
        status.setdefault((collective, algorithm), set()).add(state if nbytes else "empty")
    assert status[("gather", "library")] == status[("gather", "linear")] == {"ok", "empty"}
    assert status[("allreduce", "linear")] == status[("allreduce", "library")] == {"ok", "empty"}
    assert status[("gather", "swapped")] == {"wrong", "empty"}  # validation catches the planted fault
    assert report["exit_code"] == 1  # ... and the sweep says so
    assert report["modelled"] and report["in_docs_table"]
    assert report["gather_unmodelled"] == ["library", "linear"]  # no formula: reported as not modelled


def test_modules_named_in_code_strings_exist():
    """Code run in a subprocess (`python -c ...`, `python -m ...`) names modules in strings, which no import
    check sees: each must exist (a moved module once left MPICH's libmpi lookup importing a dead path)."""
    import importlib
    import re

    named = []
    for path in _sources(ROOT):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named += [(path, m, n) for m, n in re.findall(r"from (fabricprobe(?:\.\w+)+) import (\w+)", node.value)]
                if re.fullmatch(r"fabricprobe(\.\w+)+", node.value) and not node.value.endswith(".h5"):
                    named.append((path, node.value, None))  # python -m fabricprobe.x (not file names)
    assert named, "the scan found no module names at all"
    for path, module, name in named:
        found = importlib.import_module(module)
        assert name is None or hasattr(found, name), (path, module, name)
