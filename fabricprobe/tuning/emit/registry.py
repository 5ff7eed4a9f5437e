"""The tuning files `fabricprobe tune` can write, one emitter per format: which library's measurements
it needs, and how it writes its files and the environment that loads them. Adding a format is adding
an entry here (and its emit_*.py module)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fabricprobe.errors import UsageError
from fabricprobe.store.owned_folder import OwnedFolder
from fabricprobe.tuning.choose.rules import Table
from fabricprobe.tuning.emit import intel as emit_intel
from fabricprobe.tuning.emit import mpich as emit_mpich
from fabricprobe.tuning.emit import openmpi as emit_openmpi
from fabricprobe.tuning.emit import openmpi_han as emit_han
from fabricprobe.tuning.plan import mpich_tree
from fabricprobe.tuning.plan.library import DEFAULT, Library


@dataclass
class Emitted:
    files: dict[str, Path] = field(default_factory=dict)  # kind -> path written
    load_env: dict[str, str] = field(default_factory=dict)  # the environment that makes the library load them
    load_lines: list[str] = field(default_factory=list)  # what to paste into a job script
    notes: list[str] = field(default_factory=list)  # decisions the user must be told about

    def update(self, other: Emitted) -> None:
        self.files.update(other.files)
        self.load_env = other.load_env or self.load_env
        self.load_lines += other.load_lines
        self.notes += other.notes


@dataclass(frozen=True)
class Emitter:
    name: str  # the --emit value
    vendor: str  # the MPI library whose measurements it needs
    write: Callable[[Table, Library, list[Any], OwnedFolder, str], Emitted]
    filenames: tuple[str, ...]  # every file it may write (each under every marker): checked before writing


# What a file's name says of its proof (the same files, before and after `tune --verify`):
UNVERIFIED = "unverified"  # nothing has shown the library applies it (written without --verify, or not yet)
PARTLY_VERIFIED = "partly-verified"  # verified, but some rules are kept without positive evidence
VERIFIED = ""  # every rule it keeps was seen to run: the plain name


REJECTED = ".REJECTED"  # appended to a file the library did not apply as measured (workflow.reject)


def marked(filename: str, marker: str) -> str:
    """filename with the marker before the extension: ompi_rules.unverified.conf."""
    stem, dot, ext = filename.rpartition(".")
    return f"{stem}.{marker}.{ext}" if marker else filename


def _openmpi(table: Table, library: Library, runs: list[Any], out: OwnedFolder, marker: str) -> Emitted:
    text = emit_openmpi.classic_rules(table, library)
    emit_openmpi.parse_classic_rules(text)  # re-read with our own strict reader before writing
    path = out.write(marked("ompi_rules.conf", marker), text)
    emitted = Emitted({"openmpi": path}, emit_openmpi.load_env(path), [emit_openmpi.load_lines(path)])
    # Several nodes: han's rules file and settings, where han served the default (emit/openmpi_han.py)
    han_text = emit_han.rules_file(table)
    han_path = None
    if han_text is not None:
        emit_han.parse_rules_file(han_text)
        han_path = out.write(marked("ompi_han_rules.conf", marker), han_text)
        emitted.files["openmpi-han"] = han_path
    known = {c: {v.name: v.env for v in library.hierarchy_variants(c)} for c in table.rules}
    han_env = emit_han.load_env(han_path, emit_han.settings(table, known))
    if han_env:
        emitted.load_env = {**emitted.load_env, **han_env}
        emitted.load_lines.append(emit_han.load_lines(han_env))
    return emitted


def _openmpi_json(table: Table, library: Library, runs: list[Any], out: OwnedFolder, marker: str) -> Emitted:
    # Open MPI 6's format: nothing here can load it
    path = out.write(marked("ompi_rules.json", UNVERIFIED), emit_openmpi.json_rules(table))
    return Emitted({"openmpi-json": path})


def _mpich(table: Table, library: Library, runs: list[Any], out: OwnedFolder, marker: str) -> Emitted:
    trees = mpich_tree.default_trees(mpich_tree.loaded_libmpi())
    trees["_cvars"] = getattr(library, "cvars", {})  # the values the forced measurements ran with
    written = {
        kind: out.write(marked(filename, marker), text)
        for kind, (filename, text) in emit_mpich.files(table, trees).items()
    }
    return Emitted(
        {f"mpich-{k}": v for k, v in written.items()},
        emit_mpich.load_env(written),
        [emit_mpich.load_lines(written, table.case_lines())],
    )


def _intel(table: Table, library: Library, runs: list[Any], out: OwnedFolder, marker: str) -> Emitted:
    fallbacks = emit_intel.fallbacks(runs, table)
    notes = intel_defaults_as_presets(table, fallbacks)
    adjust, left = emit_intel.adjust_strings(table, fallbacks)
    path = out.write(marked("impi_tuning.json", marker), emit_intel.tuning_json(table, fallbacks, ppn=table.world))
    env = emit_intel.load_env(path)
    emitted = Emitted({"intel-tuning": path}, env, [emit_intel.load_lines(env)], notes)
    if adjust:
        emitted.files["intel-adjust"] = out.write(
            marked("impi_adjust.env", marker), emit_intel.adjust_file(adjust, left)
        )
    return emitted


def intel_defaults_as_presets(table: Table, fallbacks: dict[tuple[str, int, int], int]) -> list[str]:
    """Intel MPI cannot keep its default inside its rules (JSON or ADJUST), so a range the default won in a
    collective the file tunes is written with the fastest preset measured there. Say so, and make it the
    range's rule: verification must then prove that preset applies (the default's fingerprint is not
    what the file asks for)."""
    lines = []
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue  # not in the file: Intel keeps its own default for this collective
        for n, ranges in sections.items():
            for r in ranges:
                chosen = fallbacks.get((coll, n, r.lo))
                if r.winner == DEFAULT and chosen is not None:
                    r.winner = f"preset{chosen}"
                    lines.append(
                        f"Intel MPI keeps no default inside its tuning rules: {coll} on {n} ranks "
                        f"{r.span}, won by "
                        f"the default, is written as its fastest measured preset, {r.winner}"
                    )
    return lines


EMITTERS = {
    e.name: e
    for e in (
        Emitter("openmpi", "Open MPI", _openmpi, ("ompi_rules.conf", "ompi_han_rules.conf")),
        # Open MPI 6's format, written beside, not loaded here
        Emitter("openmpi-json", "Open MPI", _openmpi_json, ("ompi_rules.json",)),
        Emitter("mpich", "MPICH", _mpich, tuple(emit_mpich.FILENAMES.values())),
        Emitter("intel", "Intel MPI", _intel, ("impi_tuning.json", "impi_adjust.env")),
    )
}
SELECTION = "fabricprobe"  # fabricprobe's own runtime selection table, for any library
SELECTION_FILE = "fabricprobe_selection.json"
# No NCCL tuner CSV: it could only come from NCCL measurements on GPUs, and none was lent to this work.
FORMATS = (*EMITTERS, SELECTION)


def for_library(vendor: str) -> list[str]:
    """--emit auto: the measured library's formats and fabricprobe's own table."""
    return [name for name, e in EMITTERS.items() if e.vendor == vendor] + [SELECTION]


def check(emits: list[str], vendor: str, source: str) -> None:
    """Refuse formats the measurements cannot give (one line)."""
    for name in emits:
        needs = EMITTERS[name].vendor if name in EMITTERS else None
        if needs and needs != vendor:
            raise UsageError(f"--emit {name} needs {needs} measurements; {source} measured {vendor}")


def filenames(emits: list[str]) -> set[str]:
    """Every name the formats `emits` may write in the output folder: each file under each marker,
    rejected or not, and fabricprobe's own table (checked before the first byte: OwnedFolder)."""
    names = {SELECTION_FILE}
    for name in emits:
        for filename in EMITTERS[name].filenames if name in EMITTERS else ():
            for marker in (UNVERIFIED, PARTLY_VERIFIED, VERIFIED):
                names |= {marked(filename, marker), marked(filename, marker) + REJECTED}
    return names


WRITER = "fabricprobe tune"  # who the output folder's ledger says wrote its files


def folder_for(out: str | Path, emits: list[str], extra: tuple[str, ...] = ()) -> OwnedFolder:
    """The output folder for the files of the formats `emits` (and the `extra` names), every path
    checked, then opened (store.owned_folder: refused in one line, nothing written)."""
    return OwnedFolder(out, filenames(emits) | set(extra), WRITER).claim().open()


def write_library_files(
    table: Table, emits: list[str], library: Library, runs: list[Any], out: OwnedFolder, marker: str = UNVERIFIED
) -> Emitted:
    """The MPI library's files for `table` (nothing where no rule beats the default), their names
    carrying `marker`."""
    emitted = Emitted()
    if table.tuned():
        for name in emits:
            if name in EMITTERS:
                emitted.update(EMITTERS[name].write(table, library, runs, out, marker))
    return emitted
