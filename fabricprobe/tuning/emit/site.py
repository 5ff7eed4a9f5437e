"""The ways a site loads tuning files for every job, written from the one environment that loads them
(an emitter's `load_env`): a shell fragment to source, Open MPI's MCA parameter file lines, an Lmod
module and a Slurm TaskProlog. Each starts with the files' proof, so a file that was not proven says
so wherever it is pasted. Every value is quoted for the file's reader, or refused before anything is
written (site_syntax: the readers' rules).

- `env.sh`: `export NAME='VALUE'` lines (a job script, `source`d by a module or a profile);
- `openmpi-mca-params.conf`: Open MPI's own `name = value` lines, the `OMPI_MCA_` prefix taken off,
  for `<prefix>/etc/openmpi-mca-params.conf` (site-wide), `~/.openmpi/mca-params.conf`, or a file
  named by `OMPI_MCA_mca_param_files`; Open MPI only;
- `modulefile.lua`: `setenv("NAME", "VALUE")` lines for Lmod;
- `slurm-task-prolog.sh`: a TaskProlog, whose `export NAME=VALUE` lines on stdout Slurm puts in each
  task's environment.
"""

from __future__ import annotations

from pathlib import Path

from fabricprobe.store.owned_folder import SCRIPT_MODE, OwnedFolder
from fabricprobe.tuning.emit import site_syntax as syntax
from fabricprobe.tuning.emit.site_syntax import MCA_PREFIX

FOLDER = "load"
PROLOG = "slurm-task-prolog.sh"
NAMES = ("env.sh", "openmpi-mca-params.conf", "modulefile.lua", PROLOG)
PATHS = tuple(f"{FOLDER}/{name}" for name in NAMES)  # inside the output folder
LONGEST_NAME = {
    "Open MPI": f"{MCA_PREFIX}coll_tuned_dynamic_rules_filename",
    "other": "MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE",
}


def _comment(mark: str, proof: str) -> str:
    return f"{mark} fabricprobe tune: {' '.join(proof.split())}\n"  # the proof is fabricprobe's own text


def env_sh(env: dict[str, str], proof: str) -> str:
    return _comment("#", proof) + "".join(syntax.shell_export(k, v) + "\n" for k, v in env.items())


def mca_params(env: dict[str, str], proof: str) -> str | None:
    """Open MPI's parameter-file lines, or None where the environment is not (all) Open MPI's."""
    if not env or not all(k.startswith(MCA_PREFIX) for k in env):
        return None
    return _comment("#", proof) + "".join(syntax.mca_line(k, v) + "\n" for k, v in env.items())


def modulefile(env: dict[str, str], proof: str) -> str:
    return _comment("--", proof) + "".join(syntax.lua_setenv(k, v) + "\n" for k, v in env.items())


def task_prolog(env: dict[str, str], proof: str) -> str:
    lines = "".join(syntax.prolog_print(k, v) + "\n" for k, v in env.items())
    return f"#!/bin/sh\n# Slurm TaskProlog. {_comment('', proof).lstrip()}{lines}exit 0\n"


def refuse_paths(paths: list[Path], open_mpi: bool) -> None:
    """Before the output folder's first byte: every path a loading file may name (each file `tune` may
    write, as the load lines give it: resolved), asked of every format's reader (syntax.refuse). A
    name of Open MPI's carries Open MPI's rules too."""
    # the longest name each library loads a file by: the TaskProlog line it makes is the longest
    name = LONGEST_NAME["Open MPI" if open_mpi else "other"]
    for path in paths:
        value = str(Path(path).resolve())
        syntax.refuse({name: value}, what=f"the output path {syntax.shown(value)}")
    if open_mpi and paths:  # the parameter file itself, as OMPI_MCA_mca_param_files names it: a list split at ','
        value = str(Path(paths[0]).parent.resolve() / FOLDER / "openmpi-mca-params.conf")
        if "," in value:
            raise syntax.Unloadable(
                f"the output path {syntax.shown(value)}: cannot be written for a site: Open MPI reads "
                "mca_param_files as a list split at ','; give another path"
            )


def read_mca_params(text: str) -> dict[str, str]:
    """The environment an Open MPI parameter file stands for (what its lines set), for checks."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            out[MCA_PREFIX + name.strip()] = value.strip()
    return out


def write(env: dict[str, str], proof: str, folder: OwnedFolder) -> dict[str, object]:
    """Write the loading files into load/ of the folder (kind -> path); when there is nothing to load
    (no file the library reads, or files rejected), none, and those an earlier `tune` left there go.
    Every value was checked (syntax.refuse) before the folder's first byte; checked again here."""
    if not env:
        for name in PATHS:
            folder.remove(name)
        return {}
    syntax.refuse(env)
    texts = {
        "load-env": ("env.sh", env_sh(env, proof)),
        "load-mca-params": ("openmpi-mca-params.conf", mca_params(env, proof)),
        "load-module": ("modulefile.lua", modulefile(env, proof)),
        "load-prolog": (PROLOG, task_prolog(env, proof)),
    }
    written = {}
    for kind, (name, text) in texts.items():
        path = f"{FOLDER}/{name}"
        if text is None:
            folder.remove(path)
            continue
        written[kind] = folder.write(path, text, mode=SCRIPT_MODE if name == PROLOG else 0o644)  # Slurm runs it
    return written
