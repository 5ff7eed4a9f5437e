"""Which variants tune-sweep's one launch switches at run time, and what it writes for each.

A variant is forced by environment variables read at MPI_Init (tuning.plan.library.Variant.env). Where
the library has a control variable of the MPI tool interface for each of them (Library.control_variable)
that MPI_T says may be written at run time (its scope: tuning.plan.switch asks before the launch,
through mpienv.mpit in a child process), the variant is switched inside the one launch by writing them.
A variable that cannot be written but may stand for the whole launch without changing the default
(Library.launch_wide: Open MPI's coll_tuned_use_dynamic_rules before 5.0.6) goes into the launch's
environment. Any other variant is measured as before, in a launch of its own, and the plan says why.

MPICH attaches no enumeration to its algorithm variables: a name's value is its position in the
description, so each variable's value at start must be the name the library gives it by default
(Library.default_value, e.g. "auto") where the user's environment does not set it; otherwise its
variants go to launches of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from fabricprobe.engine import faults
from fabricprobe.errors import UsageError
from fabricprobe.mpienv.mpit import value_named
from fabricprobe.tuning.plan.library import DEFAULT, Library, Variant
from fabricprobe.tuning.plan.variants import variant_label

METHOD = "mpit"


@dataclass
class SwitchPlan:
    method: str  # "mpit"
    new_communicator: bool  # the library applies a write to communicators made after it
    launch_env: dict[str, str]  # set for the whole one launch
    writes: dict[str, dict[str, dict[str, str]]]  # collective -> variant label -> {control variable: value}
    by_launch: list[tuple[Variant, str]] = field(default_factory=list)  # measured in launches, with why
    # collective -> variant label -> the component it changes (Open MPI's han): measured only on the
    # communicators that component serves; elsewhere the variant is the default, and not measured
    served_by: dict[str, dict[str, str]] = field(default_factory=dict)

    def switched(self, collective: str) -> list[str]:
        return list(self.writes.get(collective, {}))

    def as_job(self) -> dict:
        """What the ranks of the one launch need (tuning.measure.mpit_switch)."""
        return {
            "method": self.method,
            "new_communicator": self.new_communicator,
            "writes": self.writes,
            "served_by": self.served_by,
        }

    def as_dict(self) -> dict:
        out = asdict(self)
        out["by_launch"] = [
            {"collective": v.collective, "variant": variant_label(v.name), "why": why} for v, why in self.by_launch
        ]
        return out


def describe_variables(names: list[str]) -> dict[str, dict | None]:
    """mpienv.mpit.describe() in a child process (MPI_T without MPI_Init, and nothing of the library's
    left in this one): name -> {datatype, scope, writable, values, value} or None where it is unknown."""
    if not names:
        return {}
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    for key in [k for k in env if k.startswith(("OMPI_COMM_WORLD", "PMIX_", "PMI_"))]:
        del env[key]  # a launcher's variables would make the child a rank of someone's job
    out = subprocess.run(
        [sys.executable, "-m", "fabricprobe.mpienv.mpit", *names], capture_output=True, text=True, timeout=120, env=env
    )
    try:
        found = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        detail = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise UsageError(f"could not read the library's MPI_T control variables: {detail}") from None
    if "error" in found:
        raise UsageError(f"the library's MPI tool interface: {found['error']}")
    for name in faults.readonly_variables() & set(found):  # a test plants a read-only variable
        if found[name] is not None:
            found[name] = {**found[name], "writable": False, "scope": "readonly (planted)"}
    return found


def plan_switch(library: Library, variants: list[Variant], described: dict[str, dict | None]) -> SwitchPlan:
    """Decide, per variant, run-time switch or launch of its own (`described`: describe_variables of
    every control variable the variants' environments name)."""
    plan = SwitchPlan(METHOD, library.new_communicator, {}, {})
    for v in variants:
        if v.name == DEFAULT:
            continue
        if v.name in {h.name for h in library.hierarchy_variants(v.collective)}:
            plan.served_by.setdefault(v.collective, {})[variant_label(v.name)] = library.hierarchy_component
        writes, why = {}, ""
        for env_name, value in v.env.items():
            variable = library.control_variable(env_name)
            info = described.get(variable) if variable else None
            if info is not None and not info["writable"] and library.launch_wide.get(env_name) == value:
                plan.launch_env[env_name] = value  # set by its environment name: its value names do not matter
                continue
            if variable is None:
                why = f"{env_name} has no MPI_T control variable in {library.vendor}"
            else:
                why = refusal(library, variable, described)
            if why:
                break
            writes[variable] = value
        if why:
            plan.by_launch.append((v, why))
        else:
            plan.writes.setdefault(v.collective, {})[variant_label(v.name)] = writes
    return plan


def refusal(library: Library, variable: str, described: dict[str, dict | None]) -> str:
    """Why writing `variable` through MPI_T at run time would not switch what it names ("" when it
    would): this library has no such variable, its value names cannot be trusted, the library reads it
    at MPI_Init only, or MPI_T says it may not be written (its scope). tune-sweep's one launch and the
    before/after's paired launch (tuning.measure.before_after.pairing) both ask it."""
    info = described.get(variable)
    if info is None:
        return f"this {library.vendor} has no MPI_T control variable {variable}"
    untrusted = _untrusted_names(library, variable, info)
    if untrusted:
        return untrusted
    if library.read_at_init(variable):
        return library.read_at_init(variable)
    if not info["writable"]:
        return f"{variable} cannot be written at run time (MPI_T scope {info['scope']})"
    return ""


def _untrusted_names(library: Library, variable: str, info: dict) -> str:
    """Why not to write `variable` by its value names: its value at start is not the library's
    default's name, where the environment leaves it alone (MPICH's names follow its description's
    order; a build where they do not would switch to the wrong algorithm). "" when they can be trusted."""
    expected = library.default_value(variable)
    if expected is None or variable in os.environ or f"OMPI_MCA_{variable}" in os.environ:
        return ""
    if info["values"] and value_named(info["values"], expected) != info["value"]:
        names = {value: name for value, name in info["values"]}
        return (
            f"{variable} reads {info['value']} at start, which its value names make "
            f"{names.get(info['value'], 'nothing')!r}, not {expected!r}: the names cannot be trusted"
        )
    return ""


def variables_of(library: Library, variants: list[Variant]) -> list[str]:
    """Every control variable the variants' environments name."""
    found = {library.control_variable(k) for v in variants for k in v.env}
    return sorted(n for n in found if n)
