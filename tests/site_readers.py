"""The readers of the files `tune` writes for a site, run for real on hostile output paths (issue 65):
bash and dash source `env.sh`; the TaskProlog is executed and its output read as slurmstepd reads it
(src/slurmd/slurmstepd/task.c: `export NAME=value`, the value raw to the end of the line; the lab's
real Slurm applies it in tests/site); Lmod loads the modulefile; Open MPI's `ompi_info` reads the MCA
parameter file and the environment; MPICH initialises with the environment (it aborts at MPI_Init on a
file it cannot open or parse). Used by tests/test_site_files.py (each wheel) and
tests/site/test_site_files_lab.py (Debian's Open MPI 4.1 and MPICH 4.0, Lmod, Slurm)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = {
    "Open MPI": ROOT / "tests" / "fixtures" / "tuning" / "openmpi-n8-allreduce-bcast.h5",
    "MPICH": ROOT / "tests" / "fixtures" / "tuning" / "mpich-n2.h5",
}
# MPICH 4.0 lacks some of 5.0.2's algorithms that the fixture's allreduce rules name (tune refuses them):
# the collectives whose rules both load
ONLY = {"Open MPI": [], "MPICH": ["--collectives", "allgather,alltoall,reduce_scatter"]}
MARK = "PWNED"  # every payload creates this file (in its reader's working folder, inside the case) if it runs
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
# The environment variables `tune` names its files by, per library (the loading files hold only these).
FILE_VARS = {
    "Open MPI": ("OMPI_MCA_coll_tuned_dynamic_rules_filename",),
    "MPICH": (
        "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",
        "MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE",
        "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE",
    ),
}
ON = {"Open MPI": {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}, "MPICH": {}}


@dataclass(frozen=True)
class Case:
    id: str
    name: str  # the output folder, relative to the case's parent (may hold "/")
    refused_by: tuple[str, ...] = ()  # libraries whose readers cannot carry it ("*": every one)


def _long_name(total: int, parent_len: int) -> str:
    """Folders of 200 bytes whose path from / is `total` bytes long (the parent's length given)."""
    left = total - parent_len - 1
    parts = []
    while left > 0:
        take = min(200, left)
        parts.append("L" * take)
        left -= take + 1
    return "/".join(parts)


ALL = ("*",)
CASES = [
    Case("double-quote", 'a"b'),
    Case("single-quote", "a'b"),
    Case("quotes-mixed", "a'\"b\"'c"),
    Case("backslash", "a\\b"),
    Case("backslash-n", "a\\nb"),  # dash's echo made this a newline
    Case("backslash-end", "a\\"),
    Case("dollar-paren", f"$(touch {MARK})"),
    Case("backticks", f"`touch {MARK}`"),
    Case("semicolon", f"a;touch {MARK};b"),
    Case("and-pipe", f"a&&touch {MARK}|cat>x<y"),
    Case("shell-quote-break", f"x'; touch {MARK}; '"),
    Case("double-dash", "--x"),
    Case("leading-dash", "-rf"),
    Case("lua-long-bracket", "a]]b]==]c[[d"),
    Case("lua-call", f'l")os.execute("touch {MARK}")--'),
    Case("lua-escape", "a\\065\\x41\\u{41}"),
    Case("percent", "%s%n%d%%"),
    Case("dollar-var", "$HOME${PATH}"),
    Case("bang", "a!b!!"),
    Case("glob", "a*?[b]{c}"),
    Case("comma", "a,b", refused_by=("Open MPI",)),  # OMPI_MCA_mca_param_files is split at ','
    Case("tilde", "~a~"),
    Case("space", "a b"),
    Case("leading-space", " a"),
    Case("trailing-space", "a "),
    Case("hash", "#a"),
    Case("mca-comments", "//a/*b*/"),
    Case("equals", "a = b"),
    Case("unicode", "ünï©ødé-路径"),
    Case("emoji", "🙂"),
    # made 4,000 bytes from / (_long_name): MPICH's longest TaskProlog line would be 4,099 bytes
    Case("long-4000", "LONG", refused_by=("MPICH",)),
    Case("home-after-colon", "a:~/b", refused_by=("Open MPI",)),
    Case("newline", "a\nexport LD_PRELOAD=/x", refused_by=ALL),
    Case("newline-mca", "a\ncoll_tuned_use_dynamic_rules = 0", refused_by=ALL),
    Case("tab", "a\tb", refused_by=ALL),
    Case("carriage-return", "a\rb", refused_by=ALL),
    Case("escape", "a\x1b[31mRED", refused_by=ALL),
    Case("delete", "a\x7fb", refused_by=ALL),
    Case("not-utf8", os.fsdecode(b"a\xffb"), refused_by=ALL),
]


def folder_name(case: Case, parent: Path) -> str:
    return _long_name(4000, len(str(parent))) if case.name == "LONG" else case.name


def refused(case: Case, vendor: str) -> bool:
    return case.refused_by == ALL or vendor in case.refused_by


def vendor_here() -> str:
    from fabricprobe.mpienv.library import library_of_this_python

    return library_of_this_python().vendor


def tune_into(parent: Path, name: str, vendor: str, *extra: str):
    """`fabricprobe tune FIXTURE --output=NAME` in `parent` (in this process), as a CompletedProcess."""
    from inprocess import run_in_process

    return run_in_process(["tune", str(FIXTURES[vendor]), f"--output={name}", *ONLY[vendor], *extra], cwd=parent)


def expected_env(folder: Path, vendor: str) -> dict[str, str]:
    """What the loading files must set, found without them: each library file `tune` left in the folder,
    by its exact path (the folder as the kernel resolves it)."""
    real = os.path.realpath(folder)
    names = {
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": "ompi_rules.unverified.conf",
        "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "mpich_mpir_tuned.unverified.json",
        "MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE": "mpich_posix_tuned.unverified.json",
        "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE": "mpich_ch4_tuned.unverified.json",
    }
    env = dict(ON[vendor])
    for var in FILE_VARS[vendor]:
        if os.path.isfile(os.path.join(real, names[var])):
            env[var] = os.path.join(real, names[var])
    return env


def _env0(text: bytes) -> dict[str, str]:
    out = {}
    for item in text.split(b"\0"):
        if b"=" in item:
            k, _, v = item.partition(b"=")
            out[os.fsdecode(k)] = os.fsdecode(v)
    return out


def _clean_env() -> dict[str, str]:
    """The environment a reader starts from: nothing fabricprobe's variables could be confused with. The
    loader's path stays: it is the site's module, which chose the MPI library (tests/site_modules.py)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH")
    return {k: os.environ[k] for k in keep if k in os.environ}


def sourced(shell: str, script: Path) -> dict[str, str]:
    """The environment `shell` has after sourcing script (bash; dash is Debian's sh)."""
    out = subprocess.run(
        [shell, "-c", '. "$0" && exec env -0', str(script)],
        capture_output=True,
        env=_clean_env(),
        cwd=script.parent,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return _env0(out.stdout)


def slurm_exports(output: bytes) -> dict[str, str]:
    """What slurmstepd puts in a task's environment from a TaskProlog's output (task.c, _proc_stdout):
    each line starting `export `, the name up to the first `=` (blanks around it dropped), the value
    raw up to the newline."""
    env = {}
    for line in output.split(b"\n"):
        if line.startswith(b"export "):
            name, eq, value = line[7:].lstrip().partition(b"=")
            if eq:
                env[os.fsdecode(name.rstrip())] = os.fsdecode(value)
    return env


def prolog(script: Path) -> dict[str, str]:
    """Run the TaskProlog as slurmstepd does (execve of its path, no arguments) and read its output."""
    out = subprocess.run([str(script)], capture_output=True, env=_clean_env(), cwd=script.parent, timeout=60)
    assert out.returncode == 0, out.stderr  # Slurm 22.05 takes a failing TaskProlog's status for the task's
    return slurm_exports(out.stdout)


def lmod(modulefile: Path, work: Path) -> dict[str, str]:
    """The environment after `module load` of the modulefile (Debian's Lmod), from a module path of its own."""
    modules = work / "modules" / "fptune"
    modules.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(modulefile, modules / "1.lua")
    script = f'. {LMOD_INIT} && module use "$0" && module load fptune/1 && exec env -0'
    out = subprocess.run(
        ["bash", "-c", script, str(work / "modules")], capture_output=True, env=_clean_env(), cwd=work, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return _env0(out.stdout)


def ompi_info(binary: str, env: dict[str, str]) -> dict[str, str]:
    """coll/tuned's two settings as Open MPI reads them (`ompi_info --param coll tuned --level 9
    --parsable`), with env added to a clean environment: a value holding ':' is printed quoted."""
    full = {**_clean_env(), "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **env}
    out = subprocess.run(
        [binary, "--param", "coll", "tuned", "--level", "9", "--parsable"], capture_output=True, env=full, timeout=60
    )
    assert out.returncode == 0, out.stderr
    found = {}
    for line in out.stdout.split(b"\n"):
        for var in ("coll_tuned_use_dynamic_rules", "coll_tuned_dynamic_rules_filename"):
            prefix = f"mca:coll:tuned:param:{var}:value:".encode()
            if line.startswith(prefix):
                value = line[len(prefix) :]
                if b":" in value and value.startswith(b'"') and value.endswith(b'"'):
                    value = value[1:-1]
                found[f"OMPI_MCA_{var}"] = os.fsdecode(value)
    if "OMPI_MCA_coll_tuned_use_dynamic_rules" in found:  # printed as its enumerator's name
        found["OMPI_MCA_coll_tuned_use_dynamic_rules"] = {"true": "1", "false": "0"}.get(
            found["OMPI_MCA_coll_tuned_use_dynamic_rules"], found["OMPI_MCA_coll_tuned_use_dynamic_rules"]
        )
    return found


def _mpich_starts(env: dict[str, str], launch: tuple[str, ...]) -> subprocess.CompletedProcess:
    full = {**_clean_env(), **env}
    return subprocess.run(
        [*launch, sys.executable, "-c", "from mpi4py import MPI; print(MPI.COMM_WORLD.size)"],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def mpich(env: dict[str, str], launch: tuple[str, ...] = ()) -> dict[str, str]:
    """The tuning files MPICH reads with env (MPI_Init of a singleton): it aborts there on a file it
    cannot open or parse (5.0: "Unable to open collective tuning file"; 4.0: a segmentation fault), so
    a clean start with each path,
    and a failed one with that path changed by one character, show it opened exactly that file.
    Returns the variables it read so (MPI_T reads MPICH's string variables back empty). `launch`: a
    launcher prefix (mpiexec -n 1), none for a singleton."""
    files = {k: v for k, v in env.items() if k in FILE_VARS["MPICH"]}
    started = _mpich_starts(files, launch)
    assert started.returncode == 0, started.stderr[-2000:]
    for name, value in files.items():
        changed = _mpich_starts({**files, name: value + "~"}, launch)
        # MPICH 5.0 says "Unable to open collective tuning file"; 4.0 dies of a segmentation fault
        assert changed.returncode != 0, (name, changed.stderr[-500:])
    return files


def nothing_ran(parent: Path) -> bool:
    return not any(p.name == MARK for p in parent.rglob(MARK))
