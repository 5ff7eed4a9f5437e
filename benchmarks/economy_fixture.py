"""Cut a tune-sweep results file down to a test fixture for the budgeted search (tests/test_economy.py).

The copy keeps every run's attributes and point table (gzip-compressed) and, per point, only what the
replay reads of its samples: the slowest rank's time in the first KEEP calls (economy.SCREEN_ITERS of
them are read), as a (calls × 1) matrix. --collectives and --comm-sizes keep a part of the grid.
fabricprobe reads the copy as it reads the original.

    python benchmarks/economy_fixture.py SRC.h5 DST.h5 [--collectives allreduce] [--comm-sizes 2,4,8]
"""

from __future__ import annotations

import argparse
import json

import h5py
import numpy as np

from fabricprobe.stats import per_iteration
from fabricprobe.tuning.economy.search import SCREEN_ITERS

KEEP = 20  # calls kept per point: room for a larger SCREEN_ITERS without cutting the fixtures again
assert SCREEN_ITERS <= KEEP


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--collectives", help="keep these collectives' jobs only")
    ap.add_argument("--comm-sizes", help="keep points on these communicator sizes only")
    args = ap.parse_args()
    wanted = set(args.collectives.split(",")) if args.collectives else None
    comms = {int(c) for c in args.comm_sizes.split(",")} if args.comm_sizes else None
    with h5py.File(args.src, "r") as src, h5py.File(args.dst, "w") as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v
        runs = dst.create_group("runs")
        for run_id, g in src["runs"].items():
            config = json.loads(g.attrs.get("config", "{}") or "{}")
            if wanted is not None and not wanted & set(config.get("collectives") or []):
                continue
            table = g["points"][()]
            if comms is not None:
                table = table[np.isin(table["nranks"], list(comms)) | (table["collective"] == b"empty")]
            out = runs.create_group(run_id)
            for k, v in g.attrs.items():
                out.attrs[k] = v
            out.create_dataset("points", data=table, compression="gzip", compression_opts=9)
            samples = out.create_group("samples")
            for index in table["index"]:
                name = f"{int(index):06d}"
                if name in g["samples"]:
                    first = per_iteration(g["samples"][name][()])[:KEEP]
                    samples.create_dataset(name, data=first[:, None])


if __name__ == "__main__":
    main()
