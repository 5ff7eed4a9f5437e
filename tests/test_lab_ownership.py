"""`lab down` removes and kills only what `lab up` made. Before this check, as root,
`lab down --name ..` removed the state folder's parent, `--name /` removed `/`, and a pid file's
number was signalled whatever process held it now. Every case here runs against a state root of
its own (FABRICPROBE_LAB_STATE) with files around it that must all survive."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpirun import run_local

from fabricprobe.errors import UsageError
from fabricprobe.lab import network
from fabricprobe.lab.config import check_name

IS_ROOT = os.geteuid() == 0


def _tree(top: Path) -> dict[str, bytes]:
    """Every file under `top` with its bytes, and every folder: what must not change."""
    found: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for d in dirnames:
            found[os.path.relpath(os.path.join(dirpath, d), top) + "/"] = b""
        for f in filenames:
            path = os.path.join(dirpath, f)
            found[os.path.relpath(path, top)] = b"link" if os.path.islink(path) else Path(path).read_bytes()
    return found


@pytest.fixture
def world(tmp_path):
    """tmp/outside/{precious,state/{someone/...}} with the lab's state root at tmp/outside/state."""
    top = tmp_path / "outside"
    (top / "precious").mkdir(parents=True)
    (top / "precious" / "data.txt").write_text("keep me")
    state = top / "state"
    someone = state / "someone"  # a folder in the state root that `lab up` did not make
    (someone / "slurm").mkdir(parents=True)
    (someone / "lab.json").write_text("{}")
    return top, state


def _down(state: Path, name: str) -> subprocess.CompletedProcess:
    return run_local(["lab", "down", "--name", name], timeout=60, env={"FABRICPROBE_LAB_STATE": str(state)})


@pytest.mark.process
@pytest.mark.parametrize("name", ["..", "/", "/tmp", "../precious", "a/../..", "", "ab\n", "fp²", "FP", "x" * 9])
def test_a_name_that_is_not_a_lab_name_is_refused_and_nothing_changes(world, name):
    top, state = world
    before = _tree(top)
    out = _down(state, name)
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "invalid lab name" in lines[0] and "Traceback" not in out.stderr
    assert _tree(top) == before


@pytest.mark.parametrize("bad", ["..", "/", "/etc", "a/b", "", "ab\n", "fp²", "Fp", "1fp", "abcdefghi"])
def test_check_name_refuses_every_path_and_non_ascii_name(bad):
    with pytest.raises(UsageError):
        check_name(bad)
    assert check_name("fplab") == "fplab" and check_name("a1b2c3d4") == "a1b2c3d4"


def _decoy(tmp_path: Path, program: str) -> subprocess.Popen:
    """A long-lived process whose command is `program` (a copy of sleep named so), as a pid reused by
    someone else's daemon would be."""
    exe = tmp_path / program
    shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    return subprocess.Popen([str(exe), "300"])


@pytest.mark.process
@pytest.mark.skipif(not IS_ROOT, reason="lab down needs root")
def test_a_lab_never_brought_up_removes_nothing_and_kills_nothing(world, tmp_path):
    top, state = world
    decoy = _decoy(tmp_path, "slurmd")
    try:
        (state / "someone" / "slurm" / "slurmd-someone0.pid").write_text(f"{decoy.pid}\n")
        before = _tree(top)
        for name in ("someone", "neverup"):
            out = _down(state, name)
            assert out.returncode == 0 and "removed nothing" in out.stderr, out.stderr
        assert _tree(top) == before
        time.sleep(0.2)
        assert decoy.poll() is None, "a process named in a pid file the lab did not write was signalled"
    finally:
        decoy.kill()


@pytest.mark.process
@pytest.mark.skipif(not IS_ROOT, reason="lab down needs root")
def test_a_pid_file_of_an_owned_lab_signals_only_that_labs_daemon(world, tmp_path):
    """An owned lab whose pid files now name other processes (the daemons died, the pids were reused):
    its folder is removed, the processes live."""
    top, state = world
    lab = state / "mine"
    (lab / "slurm").mkdir(parents=True)
    (lab / "OWNER").write_text(json.dumps({"made_by": "fabricprobe lab up", "name": "mine", "namespaces": []}))
    decoys = {p: _decoy(tmp_path, p) for p in ("slurmd", "slurmctld", "munged")}
    try:
        for program, proc in decoys.items():
            stem = "slurmd-mine0" if program == "slurmd" else program
            (lab / "slurm" / f"{stem}.pid").write_text(f"{proc.pid}\n")
        out = _down(state, "mine")
        assert out.returncode == 0, out.stderr
        time.sleep(0.2)
        assert all(proc.poll() is None for proc in decoys.values()), "a reused pid was signalled"
        assert not lab.exists() and (top / "precious" / "data.txt").read_text() == "keep me"
        assert (state / "someone" / "lab.json").exists()
    finally:
        for proc in decoys.values():
            proc.kill()


@pytest.mark.process
@pytest.mark.skipif(not IS_ROOT, reason="lab down needs root")
def test_a_symlinked_lab_folder_is_not_followed(world, tmp_path):
    top, state = world
    elsewhere = top / "precious"
    (elsewhere / "OWNER").write_text(json.dumps({"made_by": "fabricprobe lab up", "name": "link", "namespaces": []}))
    (state / "link").symlink_to(elsewhere, target_is_directory=True)
    before = _tree(top)
    out = _down(state, "link")
    assert out.returncode == 0 and "removed nothing" in out.stderr, out.stderr
    assert _tree(top) == before


def _netns_reason() -> str | None:
    if not IS_ROOT:
        return "needs root"
    try:
        network.preflight()
    except UsageError as exc:
        return str(exc)
    return None


@pytest.mark.process
@pytest.mark.skipif(_netns_reason() is not None, reason=str(_netns_reason()))
def test_namespaces_not_made_by_the_lab_survive_down_and_stop_up(world):
    """Lab "fpo" owns fpo-sw and fpo0 only: a namespace fpo1 that someone else made (or lab "fpo1"'s
    host... fpo10 would be the same) survives `down`, and `up` refuses to take it over."""
    _, state = world
    pid = os.getpid() % 1000
    name = f"fpo{pid}"
    lab = state / name
    lab.mkdir(parents=True)
    mine, theirs = f"{name}0", f"{name}1"
    (lab / "OWNER").write_text(json.dumps({"made_by": "fabricprobe lab up", "name": name, "namespaces": [mine]}))
    for ns in (mine, theirs):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        out = run_local(
            ["lab", "up", "--name", name, "--hosts", "2", "--subnet", "10.214.78.0/24"],
            timeout=120,
            env={"FABRICPROBE_LAB_STATE": str(state)},
        )
        assert out.returncode == 2 and f"{theirs} exists and was not made" in out.stderr, out.stderr
        assert _down(state, name).returncode == 0
        assert network.present([mine, theirs]) == [theirs]
    finally:
        for ns in (mine, theirs):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.process
def test_the_cli_names_are_checked_before_anything_else():
    """Every lab subcommand takes --name through check_name (argparse type), so none can reach a path."""
    for action in ("up", "down", "status", "run", "slow"):
        out = subprocess.run(
            [sys.executable, "-m", "fabricprobe", "lab", action, "--name", "../x"], capture_output=True, text=True
        )
        assert out.returncode == 2 and "invalid lab name" in out.stderr, (action, out.stderr)
