"""docs/tuning.md, "On several nodes": what runs when an allreduce spans nodes, by its reduction trace
(tuning/verify/probe.py: how many elements each local reduction step of rank 0..n-1 combines), with
the served path fabricprobe records beside it.

    python benchmarks/several_nodes_traces.py LAUNCHER N OUT.json    (LAUNCHER: the lab's mpiexec wrapper)

Cases, each one probe job: the library as it comes; han excluded (`OMPI_MCA_coll=^han`: flat tuned);
a coll/tuned algorithm forced (`coll_tuned_use_dynamic_rules=1`, `coll_tuned_allreduce_algorithm=4`,
ring) with han on and with han off; han's inter-node module switched to adapt; han's node-local module
switched to sm. A forced tuned algorithm that leaves han's steps unchanged was not consulted for the
whole communicator. Under han the order of the steps changes from run to run (the pipelined tasks
interleave), so the steps are compared per rank in any order."""

from __future__ import annotations

import json
import sys

from fabricprobe.tuning.measure.mpit_switch import same_steps
from fabricprobe.tuning.verify.fingerprint import probe

SIZE = 1 << 20  # 1 MiB of float32: 262,144 elements
RING = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}
CASES = {
    "as it comes": {},
    "han excluded (coll=^han)": {"OMPI_MCA_coll": "^han"},
    "tuned ring forced, han on": RING,
    "tuned ring forced, han excluded": {**RING, "OMPI_MCA_coll": "^han"},
    "han inter-node module adapt": {"OMPI_MCA_coll_han_allreduce_up_module": "1"},
    "han node-local module sm": {"OMPI_MCA_coll_han_allreduce_low_module": "1"},
}


def _summary(trace: list[list[int]]) -> str:
    """Per rank: number of reduction steps and the distinct step sizes."""
    return "; ".join(f"r{r}: {len(steps)} × {sorted(set(steps))}" for r, steps in enumerate(trace))


def main() -> int:
    launcher, n, out = [sys.argv[1]], int(sys.argv[2]), sys.argv[3]
    results = {}
    for name, env in CASES.items():
        path = json.loads(probe(launcher, n, "allreduce", SIZE, "path", env))
        trace = probe(launcher, n, "allreduce", SIZE, "trace", env)
        results[name] = {"env": env, "path": path["text"], "shape": path["shape"], "trace": trace}
        shown = trace if trace.startswith("error") else _summary(json.loads(trace))
        print(f"{name}: {path['text']} | {shown}", flush=True)
    same = same_steps(*(json.loads(results[k]["trace"]) for k in ("tuned ring forced, han on", "as it comes")))
    print(f"forced ring under han leaves the steps as they come (in any order): {same}")
    with open(out, "w") as f:
        json.dump({"size_bytes": SIZE, "nranks": n, "cases": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
