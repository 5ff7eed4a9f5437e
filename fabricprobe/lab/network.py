"""Make and remove a lab's network: one namespace per emulated host, one switch namespace holding a
bridge, a veth link from each host (interface `lab0`) to a bridge port, and a tbf qdisc on both ends
of every link when the rate is limited. Nothing is added to the root namespace: every address and
route lives in the lab's own namespaces. The hosts file of each namespace (/etc/netns/NS/hosts,
bind-mounted over /etc/hosts by `ip netns exec`) names every host, as DNS would on a cluster."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from fabricprobe.errors import UsageError
from fabricprobe.lab.config import LabConfig, check_name

IFACE = "lab0"  # the host side of every link, the same name in every host namespace
BRIDGE = "br0"
NETNS_DIR = Path("/run/netns")
ETC_NETNS = Path("/etc/netns")
TBF_LATENCY = "50ms"  # queueing a packet may wait before tbf drops it


class LabError(UsageError):
    """A lab command failed in a way the user can act on (one line, exit status 2)."""


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True)
    if check and out.returncode != 0:
        detail = (out.stderr.strip() or out.stdout.strip()).splitlines()
        raise LabError(f"`{' '.join(argv)}` failed: {detail[-1] if detail else f'exit {out.returncode}'}")
    return out


def preflight() -> None:
    """Root, iproute2 and unshare present, and this kernel lets us make network namespaces."""
    if os.geteuid() != 0:
        raise LabError("the fabric lab needs root (it creates network namespaces): run it as root or with sudo")
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            raise LabError(f"the fabric lab needs `{tool}` (iproute2 / util-linux), which is not on PATH")
    probe = f"fplabprobe{os.getpid()}"  # its own: two checks at once (two test workers) raced on one name
    out = _run(["ip", "netns", "add", probe], check=False)
    if out.returncode != 0:
        raise LabError(
            "this machine cannot create network namespaces (a container without CAP_SYS_ADMIN?): "
            + (out.stderr.strip().splitlines() or ["ip netns add failed"])[-1]
        )
    _run(["ip", "netns", "del", probe], check=False)


def _belongs(entry: str, name: str) -> bool:
    """Whether a namespace (or /etc/netns folder) is one lab `name` makes: NAME0.. or NAME-sw."""
    rest = entry[len(name) :]
    return entry.startswith(name) and (rest == "-sw" or (rest.isascii() and rest.isdigit()))


def existing(name: str) -> list[str]:
    """The namespaces of lab `name` that exist now (found by name, so a crashed lab is found too)."""
    check_name(name)
    if not NETNS_DIR.is_dir():
        return []
    return [entry for entry in sorted(os.listdir(NETNS_DIR)) if _belongs(entry, name)]


def present(namespaces: list[str] | tuple[str, ...]) -> list[str]:
    """Those of `namespaces` that exist now."""
    return [ns for ns in namespaces if (NETNS_DIR / ns).exists()]


def tbf_burst(rate_bits: float) -> int:
    """Bucket size: 2 ms at the rate (what an hrtimer kernel needs to keep the rate), at least 32 KiB."""
    return max(32 * 1024, int(rate_bits / 8 * 0.002))


def _shape(ns: str, dev: str, rate_bits: float) -> None:
    if rate_bits <= 0:
        _run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"], check=False)
        return
    _run(
        [
            "ip",
            "netns",
            "exec",
            ns,
            "tc",
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            f"{int(rate_bits)}bit",
            "burst",
            str(tbf_burst(rate_bits)),
            "latency",
            TBF_LATENCY,
        ]
    )


def shape_host(lab: LabConfig, host: int, rate_bits: float) -> None:
    """Set one host's link (both directions) to rate_bits, 0 = unlimited: `lab slow`."""
    _shape(lab.host_names[host], IFACE, rate_bits)
    _shape(lab.switch, f"p{host}", rate_bits)


def _hosts_file(lab: LabConfig) -> str:
    lines = ["127.0.0.1 localhost"]
    lines += [f"{lab.address(i)} {h}" for i, h in enumerate(lab.host_names)]
    lines.append(f"{lab.head_address} {lab.head}")
    return "\n".join(lines) + "\n"


def create(lab: LabConfig) -> None:
    """Build the lab's network from nothing (call remove() first)."""
    sw = lab.switch
    made: list[str] = []
    try:
        for ns in lab.namespaces:
            _run(["ip", "netns", "add", ns])
            made.append(ns)
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run(["ip", "-n", sw, "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "-n", sw, "link", "set", BRIDGE, "up"])
        etc = ETC_NETNS / sw
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text(_hosts_file(lab))
        for i, host in enumerate(lab.host_names):
            port = f"p{i}"
            _run(["ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", IFACE, "netns", host])
            _run(["ip", "-n", sw, "link", "set", port, "master", BRIDGE])
            _run(["ip", "-n", sw, "link", "set", port, "up"])
            _run(["ip", "-n", host, "addr", "add", f"{lab.address(i)}/{lab.prefixlen}", "dev", IFACE])
            _run(["ip", "-n", host, "link", "set", IFACE, "up"])
            _shape(host, IFACE, lab.rate_bits)  # host -> switch
            _shape(sw, port, lab.rate_bits)  # switch -> host
            etc = ETC_NETNS / host
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(_hosts_file(lab))
    except BaseException:
        remove(lab.namespaces)
        raise


def _kill_inside(ns: str) -> None:
    out = _run(["ip", "netns", "pids", ns], check=False)
    for pid in out.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def remove(namespaces: list[str] | tuple[str, ...]) -> list[str]:
    """Remove these namespaces and their hosts files, with anything still running inside. The caller
    names them (the lab's ownership record, state.owned_namespaces), never a pattern: lab "fp" must
    not take lab "fp1"'s host "fp10", nor a namespace of someone else's."""
    gone = []
    for ns in present(namespaces):
        _kill_inside(ns)
        _run(["ip", "netns", "del", ns], check=False)
        gone.append(ns)
    for ns in namespaces:
        etc = ETC_NETNS / ns
        if etc.is_symlink():
            etc.unlink()
        elif etc.is_dir():
            shutil.rmtree(etc, ignore_errors=True)
    return gone


def _qdisc_summary(text: str) -> str:
    """ "qdisc tbf 8002: root refcnt 3 rate 1Gbit burst 250000b lat 50ms" -> "tbf rate 1Gbit burst 250000b lat 50ms"."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if not line:
        return "-"
    words = line.split()
    kind = words[1] if len(words) > 1 else line
    rest = line.split("refcnt", 1)[1].split(None, 1)[1:] if "refcnt" in line else []
    return " ".join([kind, *rest]) if kind == "tbf" else kind


def link_state(lab: LabConfig) -> dict[str, dict[str, str]]:
    """host -> {address, link up?, qdisc} as the system reports them now."""
    out = {}
    for host in lab.host_names:
        addr = _run(["ip", "-n", host, "-brief", "addr", "show", "dev", IFACE], check=False)
        qdisc = _run(["ip", "netns", "exec", host, "tc", "qdisc", "show", "dev", IFACE], check=False)
        fields = addr.stdout.split()
        out[host] = {
            "address": fields[2] if len(fields) > 2 else "-",
            "state": fields[1] if len(fields) > 1 else ("missing" if addr.returncode else "?"),
            "qdisc": _qdisc_summary(qdisc.stdout),
        }
    return out
