"""The pair matrix as a picture: bandwidth and latency of every pair, rank by rank, nodes outlined,
so a slow link shows as a cross (one node's row and column) and a slow pair as one cell."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fabricprobe.doctor.results import Measurements
from fabricprobe.errors import UsageError
from fabricprobe.report.plots import load_pyplot
from fabricprobe.store.outputs import check_file_output, write_file

FORMATS = (".png", ".svg", ".pdf")


def matrices(m: Measurements) -> tuple[np.ndarray, np.ndarray]:
    """(bandwidth in Gbit/s, latency in µs), N × N, NaN on the diagonal."""
    n = len(m.hosts)
    bw = np.full((n, n), np.nan)
    lat = np.full((n, n), np.nan)
    large, small = m.large_time(), m.latency()
    for j, (a, b) in enumerate(zip(m.pairs["a"], m.pairs["b"])):
        bw[a, b] = bw[b, a] = m.large_bytes * 8 / large[j] / 1e9
        lat[a, b] = lat[b, a] = small[j] * 1e6
    return bw, lat


def heatmap(m: Measurements, output: str, title: str = "") -> Path:
    path = Path(output)
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"invalid -o {output}: the picture's name must end in {', '.join(FORMATS)}")
    check_file_output(output, "plot")
    plt = load_pyplot()
    bw, lat = matrices(m)
    n = len(m.hosts)
    fig, axes = plt.subplots(1, 2, figsize=(4 + 0.5 * n * 2, 2.5 + 0.45 * n), constrained_layout=True)
    for ax, data, label, cmap in (
        (axes[0], bw, f"bandwidth at {m.large_bytes} B (Gbit/s)", "viridis"),
        (axes[1], lat, f"latency at {m.small_bytes} B (µs)", "viridis_r"),
    ):
        im = ax.imshow(data, cmap=cmap)
        fig.colorbar(im, ax=ax, shrink=0.8, label=label)
        ticks = [f"{r} {m.hosts[r]}" for r in range(n)]
        ax.set_xticks(range(n), ticks, rotation=90, fontsize=7)
        ax.set_yticks(range(n), ticks, fontsize=7)
        for r in range(1, n):  # node boundaries
            if m.node_of[r] != m.node_of[r - 1]:
                ax.axhline(r - 0.5, color="white", lw=1)
                ax.axvline(r - 0.5, color="white", lw=1)
        if n <= 12:
            for a in range(n):
                for b in range(n):
                    if np.isfinite(data[a, b]):
                        r, g, bl, _ = im.cmap(im.norm(data[a, b]))
                        ink = "k" if 0.299 * r + 0.587 * g + 0.114 * bl > 0.5 else "w"  # readable on the cell
                        ax.text(b, a, f"{data[a, b]:.3g}", ha="center", va="center", fontsize=6, color=ink)
    fig.suptitle(title or "fabricprobe doctor: pair matrix", fontsize=9)
    try:
        write_file(str(path), lambda tmp: fig.savefig(tmp, dpi=130), "plot")
    finally:
        plt.close(fig)
    return path
