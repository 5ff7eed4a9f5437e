"""The ways a site loads tuning files for every job, written from the one environment that loads them
(an emitter's `load_env`): a shell fragment to source, Open MPI's MCA parameter file lines, an Lmod
module and a Slurm TaskProlog. Each starts with the files' proof, so a file that was not proven says
so wherever it is pasted.

- `env.sh`: `export NAME=VALUE` lines (a job script, `source`d by a module or a profile);
- `openmpi-mca-params.conf`: Open MPI's own `name = value` lines, the `OMPI_MCA_` prefix taken off,
  for `<prefix>/etc/openmpi-mca-params.conf` (site-wide), `~/.openmpi/mca-params.conf`, or a file
  named by `OMPI_MCA_mca_param_files`; Open MPI only;
- `modulefile.lua`: `setenv("NAME", "VALUE")` lines for Lmod;
- `slurm-task-prolog.sh`: a TaskProlog, whose `export NAME=VALUE` lines on stdout Slurm puts in each
  task's environment.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from fabricprobe.store.outputs import write_text as write_whole

FOLDER = "load"
MCA_PREFIX = "OMPI_MCA_"
PROLOG = "slurm-task-prolog.sh"
NAMES = ("env.sh", "openmpi-mca-params.conf", "modulefile.lua", PROLOG)


def env_sh(env: dict[str, str], proof: str) -> str:
    return f"# fabricprobe tune: {proof}\n" + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())


def mca_params(env: dict[str, str], proof: str) -> str | None:
    """Open MPI's parameter-file lines, or None where the environment is not (all) Open MPI's."""
    if not env or not all(k.startswith(MCA_PREFIX) for k in env):
        return None
    lines = "".join(f"{k[len(MCA_PREFIX) :]} = {v}\n" for k, v in env.items())
    return f"# fabricprobe tune: {proof}\n{lines}"


def modulefile(env: dict[str, str], proof: str) -> str:
    lines = "".join(f'setenv("{k}", "{v}")\n' for k, v in env.items())
    return f"-- fabricprobe tune: {proof}\n{lines}"


def task_prolog(env: dict[str, str], proof: str) -> str:
    lines = "".join(f"echo {shlex.quote(f'export {k}={v}')}\n" for k, v in env.items())
    return f"#!/bin/sh\n# Slurm TaskProlog. fabricprobe tune: {proof}\n{lines}"


def read_mca_params(text: str) -> dict[str, str]:
    """The environment an Open MPI parameter file stands for (what its lines set), for checks."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            out[MCA_PREFIX + name.strip()] = value.strip()
    return out


def write(env: dict[str, str], proof: str, out: Path) -> dict[str, Path]:
    """Write the loading files into out/load/ (kind -> path); when there is nothing to load (no file
    the library reads, or files rejected), none, and those an earlier `tune` left there go."""
    folder = out / FOLDER
    if not env:
        for name in NAMES:
            (folder / name).unlink(missing_ok=True)
        return {}
    folder.mkdir(exist_ok=True)
    texts = {
        "load-env": ("env.sh", env_sh(env, proof)),
        "load-mca-params": ("openmpi-mca-params.conf", mca_params(env, proof)),
        "load-module": ("modulefile.lua", modulefile(env, proof)),
        "load-prolog": (PROLOG, task_prolog(env, proof)),
    }
    written = {}
    for kind, (name, text) in texts.items():
        if text is not None:
            path = folder / name
            write_whole(path, text, mode=0o755 if name == PROLOG else None)  # Slurm runs the TaskProlog
            written[kind] = path
    return written
