"""Prove that a tuning file is loaded and applied: at the first and last measured size of every
rule's range (so on both sides of every boundary), the algorithm that runs with the file must leave
the same fingerprint as the algorithm the rule names, run forced."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Callable

from fabricprobe.tuning.choose.rules import Table
from fabricprobe.tuning.emit.mpich import needs_builtin_op
from fabricprobe.tuning.plan.hierarchy import is_hierarchy
from fabricprobe.tuning.plan.library import DEFAULT, Library
from fabricprobe.tuning.plan.openmpi_han import GLOBAL, level_of
from fabricprobe.tuning.verify.fingerprint import method_for
from fabricprobe.tuning.verify.probes import Fingerprints, Unknown

VERIFIED = "verified"  # the file's algorithm is the rule's, and it is told apart from the default
INDISTINGUISHABLE = "indistinguishable"  # it matches, but so would the default: no proof either way
MISMATCH = "MISMATCH"  # the file did not make the rule's algorithm run
UNVERIFIABLE = "unverifiable"  # no fingerprint method for this collective on this library
NOT_CONSULTED = "not consulted"  # another component serves the collective there: the rule is never read
ERROR = "error"
NO_PROOF = (INDISTINGUISHABLE, UNVERIFIABLE, NOT_CONSULTED)  # passed, but not positive evidence


@dataclass
class Check:
    collective: str
    comm_size: int
    size: int
    expected: str
    status: str
    detail: str = ""
    level: str = ""  # the level of han's hierarchy the rule changes (several nodes); "" for a flat rule

    def as_dict(self) -> dict:
        return asdict(self)


def expected_env(library: Library, collective: str, winner: str) -> dict[str, str] | None:
    """The environment that forces a rule's algorithm ({} for the library's default), or None for an
    algorithm this library does not name."""
    if winner == DEFAULT:
        return {}
    for v in library.known_variants(collective):
        if v.name.replace("-", "_") == winner:
            return v.env
    return None


def verify(
    table: Table,
    library: Library,
    tuned_env: dict[str, str],
    launcher: list[str],
    progress: Callable[[str], None] | None = None,
    scratch: str | None = None,
    grouped: bool = True,
    fingerprints: Fingerprints | None = None,
) -> list[Check]:
    """`scratch`: a folder every node sees, for the probes' per-rank monitoring files (the tuning
    files' folder; node-local /tmp is not enough under a scheduler). `grouped`: the fingerprints are
    first taken in launches grouped by environment (Fingerprints.plan); without it, one launch each
    (what the tests compare the groups with). `fingerprints`: the caller's, to read its launches and
    seconds afterwards."""
    fingerprints = fingerprints or Fingerprints(launcher, scratch)
    fingerprints.run_time = lambda env: run_time_writes(library, env)
    if grouped:
        fingerprints.plan(lambda: _checks(table, library, tuned_env, fingerprints, None), progress)
    checks = _checks(table, library, tuned_env, fingerprints, progress)
    for c in checks:
        if is_hierarchy(c.expected):
            c.level = level_of(c.expected)
    return checks


def run_time_writes(library: Library, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]] | None:
    """(launch environment, MPI_T writes) giving `env`'s forced coll/tuned algorithm inside a job of
    several (Open MPI: the algorithm is read when a communicator is made, so the probe's new
    communicator made after the write runs it, as tune-sweep's one launch does); None for any other
    environment (the default, the files, han's settings), which keeps a launch of its own."""
    if library.vendor != "Open MPI":
        return None
    launch = {k: v for k, v in env.items() if library.launch_wide.get(k) == v}
    writes = {}
    for name, value in env.items():
        if name in launch:
            continue
        variable = library.control_variable(name)
        if variable is None or not (variable.startswith("coll_tuned_") and variable.endswith("_algorithm")):
            return None
        writes[variable] = value
    return (launch, writes) if writes else None


def _checks(table, library, tuned_env, fingerprints, progress) -> list[Check]:
    """The verdicts, asking `fingerprints` for every fingerprint they rest on."""

    def fp(coll: str, n: int, size: int, method: str, env: dict[str, str]) -> str:
        settle = method == "monitor" and several_nodes(coll, n)
        return fingerprints(coll, n, size, method, env, settle)

    def several_nodes(coll: str, n: int) -> bool:
        """Whether the job of n ranks spans nodes (the library's own view: the probe's path)."""
        if library.vendor != "Open MPI":
            return False
        found = fp(coll, n, 0, "path", tuned_env)  # the same probe as elsewhere()'s
        return not found.startswith("error") and not json.loads(found)["shape"].endswith(" of 1 node")

    def elsewhere(coll: str, n: int) -> str:
        """Why Open MPI's coll/tuned never reads this rule in these jobs ("" when tuned serves it)."""
        if library.vendor != "Open MPI":
            return ""
        found = fp(coll, n, 0, "path", tuned_env)
        if found.startswith("error"):
            return ""  # the fingerprints below say what fails
        path = json.loads(found)
        if path["component"] == "tuned":
            return ""
        return (
            f"{path['text']} serves {coll} on {path['shape']}: coll/tuned's rules for communicator size {n} "
            "are never consulted there"
        )

    def section(coll: str, n: int, ranges) -> list[Check]:
        checks = []
        # A section with han's own winners is steered through han (its rules file and settings):
        # every range is proven, the default's too (han as it comes). Otherwise coll/tuned's rules
        # are about a communicator that another component may serve.
        hers = any(is_hierarchy(r.winner) for r in ranges)
        why_not = "" if hers else elsewhere(coll, n)
        method = method_for(library.vendor, coll, hierarchical=hers)
        for r in ranges:
            sizes = sorted({d.size for d in (r.decisions[0], r.decisions[-1]) if d.size > 0})
            if why_not:
                checks += [Check(coll, n, size, r.winner, NOT_CONSULTED, why_not) for size in sizes]
                continue
            for size in sizes:
                if progress is not None:
                    progress(f"{coll} on {n} ranks at {size} B: expecting {r.winner}")
                if method in (None, "trace"):
                    # Where no fingerprint exists, or the trace's user op may take another path, the
                    # library must at least run the call with the file and a built-in op.
                    smoke = fp(coll, n, size, "smoke", tuned_env)
                    if smoke.startswith("error"):
                        checks.append(
                            Check(
                                coll,
                                n,
                                size,
                                r.winner,
                                ERROR,
                                f"the library fails with the file and a built-in op: {smoke}",
                            )
                        )
                        continue
                if method is None:
                    checks.append(
                        Check(
                            coll,
                            n,
                            size,
                            r.winner,
                            UNVERIFIABLE,
                            f"no fingerprint for {coll} on {library.vendor} (it runs with the file)",
                        )
                    )
                    continue
                env = expected_env(library, coll, r.winner)
                if env is None:
                    checks.append(Check(coll, n, size, r.winner, ERROR, "cannot force this algorithm"))
                    continue
                base = keeps_han_env(tuned_env) if hers and not hands_over(r.winner) else {}
                env = {**base, **env}
                tuned = fp(coll, n, size, method, tuned_env)
                default = fp(coll, n, size, method, base)
                if method == "trace" and library.vendor == "MPICH" and needs_builtin_op(coll, r.winner):
                    # The trace needs a user-defined op, which the file's guard sends to MPICH's
                    # own tree (reached through the POSIX file, so compare with the "mpir" variant).
                    mpir = expected_env(library, coll, "mpir")
                    fallbacks = {default} | ({fp(coll, n, size, method, mpir)} if mpir else set())
                    status = UNVERIFIABLE if tuned in fallbacks else MISMATCH
                    checks.append(
                        Check(
                            coll,
                            n,
                            size,
                            r.winner,
                            status,
                            f"{r.winner} runs with built-in ops only and the trace uses a user op: "
                            + (
                                "checked that the user op takes the default and a built-in op runs"
                                if status == UNVERIFIABLE
                                else f"the user op did not take the default: {tuned[:120]}"
                            ),
                        )
                    )
                    continue
                expected = fp(coll, n, size, method, env)
                if hers and method == "monitor" and default.startswith("error"):
                    # han's own run (the default) crashes under Open MPI's pml monitoring
                    smoke = "" if hands_over(r.winner) else fp(coll, n, size, "smoke", tuned_env)
                    checks.append(_under_failed_monitoring(coll, n, size, r.winner, tuned, expected, default, smoke))
                    continue
                if any(x.startswith("error") for x in (tuned, expected, default)):
                    detail = next(x for x in (tuned, expected, default) if x.startswith("error"))
                    checks.append(Check(coll, n, size, r.winner, ERROR, detail))
                elif tuned != expected:
                    checks.append(
                        Check(
                            coll,
                            n,
                            size,
                            r.winner,
                            MISMATCH,
                            f"with the file: {tuned[:120]}; {r.winner} forced: {expected[:120]}",
                        )
                    )
                elif r.winner != DEFAULT and expected == default:
                    checks.append(
                        Check(
                            coll,
                            n,
                            size,
                            r.winner,
                            INDISTINGUISHABLE,
                            "the rule's algorithm and the default leave the same fingerprint",
                        )
                    )
                else:
                    checks.append(Check(coll, n, size, r.winner, VERIFIED))
        return checks

    checks = []
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue  # nothing of this collective is in the file
        for n, ranges in sorted(sections.items()):
            try:
                checks += section(coll, n, ranges)
            except Unknown:
                continue  # planning: the section waits for the path it is served on
    return checks


def _under_failed_monitoring(coll, n, size, winner, tuned, expected, default, smoke) -> Check:
    """A range of a han section whose default could not be fingerprinted (the monitoring crashes the job
    when han runs its own algorithm). Where the files hand the call to tuned, tuned's run is
    fingerprinted like any other and must match the rule's; where han runs, there is no fingerprint,
    but the library must run the call with the files (`smoke`: that probe, with the files, taken
    only where han runs)."""
    if hands_over(winner):
        ok = not tuned.startswith("error") and tuned == expected
        status = VERIFIED if ok else (ERROR if tuned.startswith("error") else MISMATCH)
        detail = "han's own run (the default) crashes under Open MPI's pml monitoring; the files' " + (
            "run matches the rule's" if ok else f"run: {tuned[:100]}; the rule's: {expected[:100]}"
        )
        return Check(coll, n, size, winner, status, detail)
    if smoke.startswith("error"):
        return Check(coll, n, size, winner, ERROR, f"the library fails with the files and a built-in op: {smoke}")
    return Check(
        coll,
        n,
        size,
        winner,
        UNVERIFIABLE,
        f"Open MPI's pml monitoring fails under han without the files too ({default[:80]}); the call runs with them",
    )


def hands_over(winner: str) -> bool:
    """Whether a range's winner has han hand the collective to tuned (flat, flat_<alg>)."""
    return is_hierarchy(winner) and level_of(winner) == GLOBAL


def keeps_han_env(files_env: dict[str, str]) -> dict[str, str]:
    """What a range where han runs is compared under: the tuned rules file of the files, without han's.
    When han runs its own algorithm it first makes its sub-communicators, with a few small calls
    served by tuned on the whole communicator (an allreduce of one int, an allgather of ranks), and
    tuned's rules for that size apply to those: measured in the lab (2 × 2), Open MPI's pml monitoring
    counted 5 more messages between ranks 0 and 1 with the files than without, in han's own bcast and
    allgather, at every size. The proof is about han's run, so both sides load the tuned file."""
    return {k: v for k, v in files_env.items() if k.startswith("OMPI_MCA_coll_tuned_")}


def summary(checks: list[Check]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in checks:
        out[c.status] = out.get(c.status, 0) + 1
    return out


def passed(checks: list[Check]) -> bool:
    """A file is offered as good only when nothing mismatched or failed."""
    return not any(c.status in (MISMATCH, ERROR) for c in checks)
