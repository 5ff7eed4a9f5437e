"""What a lab is: emulated hosts (network namespaces) on one switch, each with K rank slots and an
uplink whose bandwidth a tbf qdisc limits. Pure data and parsing; nothing here touches the system."""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field

from fabricprobe.errors import UsageError

UNLIMITED = "unlimited"
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(k|m|g)?bit$", re.I)
_SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}
_NAME = re.compile(r"[a-z][a-z0-9]{0,7}", re.ASCII)


def check_name(name: str) -> str:
    """A lab name, or UsageError: it becomes namespace, cgroup and state-folder names, and `lab down`
    deletes and kills by it, so nothing but 1-8 lower-case ASCII letters and digits gets through (no
    "..", "/", absolute paths or empty names: `lab down --name ..` once removed the state folder's
    parent)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise UsageError(f"invalid lab name {name!r}: 1-8 lower-case letters and digits, starting with a letter")
    return name


def parse_rate(text: str) -> float:
    """tc's rate syntax (100mbit, 1gbit, 10gbit, 2.5gbit) in bit/s; 0 for "unlimited" (a rate of 0, which
    would carry nothing, built an unlimited lab: refused)."""
    text = text.strip().lower()
    if text == UNLIMITED:
        return 0.0
    m = _RATE.match(text)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"invalid --rate {text!r}: expected e.g. 100mbit, 1gbit, 10gbit or unlimited")
    return float(m.group(1)) * _SCALE[(m.group(2) or "").lower()]


def format_rate(bits: float) -> str:
    if bits <= 0:
        return "unlimited"
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bits >= scale:
            value = bits / scale
            return f"{value:g} {unit}"
    return f"{bits:g} bit/s"


@dataclass(frozen=True)
class LabConfig:
    name: str  # prefix of everything the lab makes: namespaces NAME0.., NAME-sw, /etc/netns/NAME*
    hosts: int
    ranks_per_host: int
    rate_bits: float  # per host uplink, each direction; 0 = unlimited
    subnet: str  # IPv4 network the hosts' addresses come from
    machine_cores: int = 0  # cores of the one machine all hosts share (recorded, never enforced)
    host_names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        check_name(self.name)
        if not 1 <= self.hosts <= 64:
            raise UsageError(f"invalid --hosts {self.hosts}: 1 to 64 emulated hosts")
        if not 1 <= self.ranks_per_host <= 256:
            raise UsageError(f"invalid --ranks-per-host {self.ranks_per_host}: 1 to 256")
        try:
            net = ipaddress.IPv4Network(self.subnet, strict=True)
        except ValueError as exc:
            raise UsageError(f"invalid --subnet {self.subnet!r}: {exc}") from None
        if net.num_addresses - 3 < self.hosts:  # the last usable address is the head's
            raise UsageError(
                f"--subnet {self.subnet} has room for {max(0, net.num_addresses - 3)} hosts and the head, "
                f"not {self.hosts}"
            )
        if not self.host_names:
            object.__setattr__(self, "host_names", tuple(f"{self.name}{i}" for i in range(self.hosts)))

    @property
    def switch(self) -> str:
        return f"{self.name}-sw"

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (*self.host_names, self.switch)

    def address(self, host: int) -> str:
        net = ipaddress.IPv4Network(self.subnet)
        return str(net.network_address + 1 + host)

    @property
    def head(self) -> str:
        """The head (login) node's host name: the switch namespace, when a scheduler runs there."""
        return f"{self.name}-head"

    @property
    def head_address(self) -> str:
        """The subnet's last usable address (hosts count up from the first)."""
        return str(ipaddress.IPv4Network(self.subnet).broadcast_address - 1)

    @property
    def prefixlen(self) -> int:
        return ipaddress.IPv4Network(self.subnet).prefixlen

    @property
    def slots(self) -> int:
        return self.hosts * self.ranks_per_host

    def describe(self) -> str:
        """ "emulated 2 × 2 at 1 Gbit/s" — what reports and compare print."""
        return f"emulated {self.hosts} × {self.ranks_per_host} at {format_rate(self.rate_bits)}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["host_names"] = list(self.host_names)
        d["description"] = self.describe()
        return d

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1)

    @classmethod
    def from_dict(cls, d: dict) -> "LabConfig":
        return cls(
            d["name"],
            int(d["hosts"]),
            int(d["ranks_per_host"]),
            float(d["rate_bits"]),
            d["subnet"],
            int(d.get("machine_cores", 0)),
            tuple(d.get("host_names", ())),
        )

    def same_network(self, other: "LabConfig") -> bool:
        return (self.hosts, self.rate_bits, self.subnet) == (other.hosts, other.rate_bits, other.subnet)
