"""The folder `fabricprobe tune -o DIR` writes: which names it may hold (each emitter's files under
every marker, fabricprobe's table, the loading files, the manifest), every one of them checked before
the first byte (store.owned_folder; the paths asked of every site file's reader: emit.site), the
previous tune's files replaced, and the renames verification makes (rejected, promoted)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from fabricprobe.store.owned_folder import OwnedFolder
from fabricprobe.tuning.emit import registry as emitters
from fabricprobe.tuning.emit import site as emit_site

MANIFEST = "tuning.json"
WRITER = emitters.WRITER


def output_folder(output: str, emits: list[str], vendor: str, say: Callable[[str], None]) -> OwnedFolder:
    """The output folder, every path `tune` may write in it checked before the first byte (a link, a
    file it did not write, a folder anyone may write to, a path a site file's reader cannot carry:
    one line, exit 2, nothing written), then opened; the previous tune's files it replaces are said."""
    names = emitters.filenames(emits) | set(emit_site.PATHS) | {MANIFEST}
    folder = OwnedFolder(output, names, WRITER)
    loadable = [n for n in sorted(names) if n not in {MANIFEST, *emit_site.PATHS} and not n.endswith(emitters.REJECTED)]
    emit_site.refuse_paths([folder.path(n) for n in loadable], open_mpi=vendor == "Open MPI")
    folder.claim(legacy=_written_by_earlier_versions).open()
    if folder.replaced or folder.stale:
        say(f"replacing the files the previous {WRITER} wrote in {folder.root}")
    return folder


def _written_by_earlier_versions(root: str) -> set[str]:
    """The files a tuning.json written before the ledger (store.owned_folder) names in `root`, and
    itself: those an earlier `tune` wrote there."""
    try:
        with open(Path(root, MANIFEST), "rb") as f:
            manifest = json.loads(f.read())
        files = [str(p) for p in manifest["files"].values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()
    inside = {os.path.relpath(p, root) for p in files if os.path.isabs(p)}
    return {n for n in inside if not n.startswith("..")} | {MANIFEST}


def reject(out: OwnedFolder, path: Path) -> Path:
    """Rename a file *.REJECTED so nobody loads it; returns its new name."""
    name = out.name_of(path)
    if out.exists(name):
        return out.rename(name, name + emitters.REJECTED)
    return out.path(name + emitters.REJECTED)


def withdraw(out: OwnedFolder, emitted: emitters.Emitted) -> emitters.Emitted:
    """Reject the library's files (fabricprobe's own table stays): what is left to say of them is
    their new names, and no line that loads them."""
    return emitters.Emitted({k: p if k == emitters.SELECTION else reject(out, p) for k, p in emitted.files.items()})


def replace_files(out: OwnedFolder, old: emitters.Emitted, new: emitters.Emitted) -> None:
    """Remove the files of `old` that `new` does not write again (a smaller file after pruning may need
    no POSIX tree)."""
    keep = {out.name_of(p) for p in new.files.values()}
    for path in old.files.values():
        if out.name_of(path) not in keep:
            out.remove(out.name_of(path))


def promote(out: OwnedFolder, verified: emitters.Emitted, fresh: emitters.Emitted) -> None:
    """The verified files under their new names: `fresh` was written again from the same rules with
    the new marker, so it must hold the same bytes; the old names go (withdrawn kinds stay withdrawn)."""
    for kind, path in fresh.files.items():
        name = out.name_of(path)
        old = verified.files.get(kind)
        if old is None or not out.exists(out.name_of(old)):
            out.remove(name)  # withdrawn on its own (Intel's ADJUST file): not offered again
            continue
        if out.read_bytes(out.name_of(old)) != out.read_bytes(name):
            raise RuntimeError(f"{path} differs from the file that was verified ({old})")
        if out.name_of(old) != name:
            out.remove(out.name_of(old))
    fresh.files = {k: p for k, p in fresh.files.items() if out.exists(out.name_of(p))}
