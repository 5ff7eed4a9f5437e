"""Which component of the library served each point (mpienv.coll_path), on rank 0: the library's
settings are read once through MPI_T at the start of a run, and each communicator's shape comes from
the hosts of its ranks (the hardware's, never a --ranks-per-node pretence: the library sees hosts).

Why per point: on several nodes the same collective is served by different components at different
communicator sizes (Open MPI's han only where a communicator spans nodes), and a tuning file for
coll/tuned is about the points tuned served."""

from __future__ import annotations

from typing import Any

from fabricprobe.collectives import LIBRARY
from fabricprobe.mpienv import coll_path
from fabricprobe.mpienv.topology import Topology
from fabricprobe.specs import SPECS
from fabricprobe.store.schema import POINT_DTYPE

SERVED_BY_BYTES = POINT_DTYPE["served_by"].itemsize


def api_name(collective: str, vendor: str) -> str | None:
    """The library's name for a collective fabricprobe measures (None: not a library collective)."""
    spec = SPECS.get(collective)
    if spec is None or spec.family != "collective":
        return None
    if spec.nonblocking or spec.persistent:
        # Open MPI's APIs are i<coll> and <coll>_init; MPICH builds a persistent collective from the
        # non-blocking one's schedule (MPIR_<Coll>_init_impl), so both read I<COLL>'s settings.
        base = api_name(spec.blocking.name, vendor)
        if vendor == "Open MPI":
            return "i" + base if spec.nonblocking else base + "_init"
        return "I" + base
    if getattr(spec, "call_of", ""):  # an even form of a vector collective makes the same call
        return api_name(spec.call_of, vendor)
    if spec.vendor is None:
        return collective if vendor == "Open MPI" else collective.upper()
    return spec.vendor.openmpi if vendor == "Open MPI" else spec.vendor.mpich


class ServedBy:
    def __init__(self, MPI: Any, vendor: str, topo: Topology) -> None:
        self.vendor = vendor
        self.hosts = list((topo.physical or topo).hosts)
        apis = list(dict.fromkeys(a for a in (api_name(c, vendor) for c in SPECS) if a))
        self.MPI, self.apis = MPI, apis
        self.settings = coll_path.read(MPI, vendor, apis)
        self._memo: dict[tuple[str, int], str] = {}

    def refresh(self) -> None:
        """Read the settings again (a switch inside the job wrote some: tune-sweep's one launch hands
        a collective from han to tuned through them); the paths found so far are forgotten if any changed."""
        now = coll_path.read(self.MPI, self.vendor, self.apis)
        if now.values != self.settings.values:
            self.settings, self._memo = now, {}

    def shape(self, nranks: int) -> coll_path.CommShape:
        """The sub-communicator of the first nranks ranks (engine.sweep._sub_communicators)."""
        return coll_path.CommShape.of_hosts(self.hosts[:nranks])

    def of(self, collective: str, algorithm: str, nranks: int) -> str:
        """The path's one line for a point; empty for fabricprobe's own algorithms and non-collectives."""
        api = api_name(collective, self.vendor)
        if api is None or not (algorithm == LIBRARY or algorithm.startswith(LIBRARY + ":")):
            return ""
        key = (api, nranks)
        if key not in self._memo:
            path = coll_path.resolve(self.settings, api, self.shape(nranks))
            text = path.describe() if path is not None else ""
            if len(text.encode()) > SERVED_BY_BYTES:  # the note goes first: component and levels are the fact
                text = coll_path.Path(path.component, path.levels).describe()[:SERVED_BY_BYTES]
            self._memo[key] = text
        return self._memo[key]

    def provenance(self, nranks: int) -> dict[str, str]:
        """For the run's attributes: the settings read, and each collective's path on the whole job."""
        import json  # rank 0 alone writes it

        paths = {c: self.of(c, LIBRARY, nranks) for c in SPECS if api_name(c, self.vendor)}
        return {
            "coll_settings": json.dumps(self.settings.values, sort_keys=True, default=str),
            "coll_paths": json.dumps({c: p for c, p in paths.items() if p}),
            "coll_shape": self.shape(nranks).describe(),
        }
