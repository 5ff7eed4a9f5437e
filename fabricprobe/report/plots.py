"""Pictures of results: per collective, median time and busbw against message size on log axes, one
line per algorithm (or per input), with a band from the fastest iteration to the 90th percentile to
show the noise. matplotlib is an optional extra: pip install 'fabricprobe[plot]'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabricprobe.errors import UsageError
from fabricprobe.report.compare import Side
from fabricprobe.report.labels import on_device_buffers
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.store.outputs import check_file_output, write_file

FORMATS = (".png", ".svg", ".pdf")
MAX_ROWS = 12


def load_pyplot():
    try:
        import matplotlib
    except ImportError:
        raise UsageError("plots need matplotlib: pip install 'fabricprobe[plot]'") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable and editable
    import matplotlib.pyplot as plt

    return plt


def tuning_files(run: Any) -> list[str]:
    """The tuning files the run's environment loaded (Open MPI's rules file, MPICH's JSON files), by name."""
    env = run.attrs.get("environment") or {}
    if not isinstance(env, dict):
        return []
    named = [
        v for k, v in sorted(env.items()) if k.endswith("dynamic_rules_filename") or k.endswith("TUNING_JSON_FILE")
    ]
    return [Path(str(v)).name for v in named if v]


def library(run: Any) -> str:
    return f"{run.attrs.get('mpi_vendor', '?')} {run.attrs.get('mpi_version', '')}".strip()


def input_label(side: Side, sides: list[Side]) -> str:
    """An input as its legend names it: its file and run (a launch group: its launches), the library
    where the inputs' libraries differ, and the tuning files it loaded."""
    run = side.run
    label = f"{Path(run.path).name} run {run.id}"
    if len(side.group) >= 2:
        label += f" ({len(side.group)} launches)"
    if side.algorithm:
        label += f" @{side.algorithm}"
    if len({library(s.run) for s in sides}) > 1:
        label += f", {library(run)}"
    tuned = tuning_files(run)
    if tuned:
        label += f", tuned: {', '.join(tuned)}"
    return label


def heading(sides: list[Side]) -> str:
    """The figure's title: each input's run, library and job shape, a line each."""
    lines = []
    for side in sides:
        a = side.run.attrs
        nodes = a.get("nnodes", "?")
        shape = f"{a.get('nranks', '?')} ranks on {nodes} node{'s' * (nodes != 1)}"
        if a.get("virtual_topology"):
            shape += f" as {a.get('topology', 'virtual nodes')}"
        lines.append(f"{input_label(side, [side])}: {library(side.run)}, {shape}")
    return "\n".join(lines)


def size_ticks(ax: Any) -> None:
    """Message sizes on a log2 axis, written as sizes (8 B, 4 KiB, 1 MiB), not as powers of 2."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: format_size(int(round(x))) if x >= 1 else ""))
    ax.set_xlabel("message size")


def _series(sides: list[Side], collectives: list[str] | None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """collective -> line label -> points sorted by size."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for side in sides:
        for p in side.points():
            spec = SPECS.get(p["collective"])
            if spec is None or not spec.sized or p["bytes"] <= 0 or p["status"] != "ok":
                continue
            if collectives is not None and p["collective"] not in collectives:
                continue
            label = p["algorithm"]
            extras = [
                x
                for x in (
                    p["pair"],
                    f"d={p['density']:g}" if p["density"] else "",
                    p["transfer"],
                    f"{p['nranks']} ranks" if p["nranks"] != side.run.attrs.get("nranks") else "",
                )
                if x
            ]
            if extras:
                label += f" ({', '.join(extras)})"
            if len(sides) > 1:
                label = f"{input_label(side, sides)}: {label}"
            out.setdefault(p["collective"], {}).setdefault(label, []).append(p)
    for lines in out.values():
        for rows in lines.values():
            rows.sort(key=lambda p: p["bytes"])
    return out


def plot(sides: list[Side], output: str, collectives: list[str] | None = None) -> Path:
    path = Path(output)
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"cannot tell the image format of {output}: use {', '.join(FORMATS)}")
    check_file_output(output, "plot")  # before drawing: refused in one line, nothing written
    series = _series(sides, collectives)
    if not series:
        raise UsageError("nothing to plot: no sized points in the selection")
    names = list(series)[:MAX_ROWS]
    plt = load_pyplot()
    fig, axes = plt.subplots(len(names), 2, figsize=(12, 3.6 * len(names) + 0.3 * len(sides)), squeeze=False)
    fig.set_layout_engine("constrained")  # titles, the heading and labels never overlap or clip
    fig.suptitle(heading(sides), fontsize=9)
    for row, coll in enumerate(names):
        lat, bw = axes[row]
        for label, pts in series[coll].items():
            x = [p["bytes"] for p in pts]
            (line,) = lat.plot(x, [p["median_s"] * 1e6 for p in pts], marker="o", ms=3, label=label)
            lat.fill_between(
                x,
                [p["min_s"] * 1e6 for p in pts],
                [p["p90_s"] * 1e6 for p in pts],
                color=line.get_color(),
                alpha=0.15,
                linewidth=0,
            )
            factor = [p["busbw_factor"] for p in pts]
            bw.plot(x, [p["busbw_gbps"] for p in pts], marker="o", ms=3, color=line.get_color(), label=label)
            lo = [b * f / (p["p90_s"] * 1e9) if p["p90_s"] > 0 else 0 for b, f, p in zip(x, factor, pts)]
            hi = [b * f / (p["min_s"] * 1e9) if p["min_s"] > 0 else 0 for b, f, p in zip(x, factor, pts)]
            bw.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
        for ax in (lat, bw):
            size_ticks(ax)
            ax.grid(True, which="both", alpha=0.3)
        lat.set_yscale("log")
        lat.set_ylabel("median time (µs)")
        lat.set_title(f"{coll}: time (band: fastest to p90)", fontsize=10)
        spec = SPECS[coll]
        bw.set_ylabel("busbw (GB/s)")
        device = on_device_buffers(p for pts in series[coll].values() for p in pts)
        bw.set_title(f"{coll}: busbw = algbw × {spec.busbw_formula_for(device)}", fontsize=10)
        lat.legend(fontsize=7)
    try:
        write_file(str(path), lambda tmp: fig.savefig(tmp, dpi=110), "plot")
    finally:
        plt.close(fig)
    return path
