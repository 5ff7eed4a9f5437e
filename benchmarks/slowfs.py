"""The lab's slow shared file system: a read-only FUSE passthrough of a folder whose every metadata
operation (lookup, getattr, access, open, opendir, readdir, readlink) waits `--latency-ms` on one of
`--servers` metadata servers, as a parallel file system's metadata server serves every rank's
imports at once (docs/scale.md, "Start-up on a slow shared file system"). Data reads pass through
without delay.

    pip install mfusepy                # the FUSE binding (libfuse3 through ctypes); apt-get install fuse3
    python benchmarks/slowfs.py SOURCE MOUNTPOINT [--latency-ms 0.2] [--servers 1]

It runs in the foreground until SIGINT or SIGTERM (or `fusermount3 -u MOUNTPOINT`), then unmounts.
The kernel keeps attributes and names it was given for 1 s (`attr_timeout`, `entry_timeout`: NFS and
Lustre cache them too) and never a name that was not found (`negative_timeout=0`): every failed
lookup reaches the server, as the failed opens of Python's imports did on LLNL's file systems.

MOUNTPOINT/.slowfs-ops (not listed, never delayed) reads as JSON: the operations served so far, by
kind, and how many failed — what a launch cost the server is the difference between two reads."""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import threading
import time
from collections import Counter

import mfusepy as fuse

COUNTS = "/.slowfs-ops"
COUNTS_BYTES = 4096  # the JSON padded with spaces to this size: a short read would make the kernel shrink the file
_STAT_KEYS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime", "st_ctime")


class SlowPassthrough(fuse.Operations):
    """The operations of a read-only passthrough of `root`, metadata ones delayed."""

    use_ns = True  # no timestamps are set here (read-only); the binding asks

    def __init__(self, root: str, latency_s: float, servers: int) -> None:
        self.root = os.path.realpath(root)
        self.latency_s = latency_s
        self.servers = threading.Semaphore(servers)
        self.counts: Counter[str] = Counter()
        self._counting = threading.Lock()

    def _real(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _served(self, kind: str, work):
        """work() after the metadata server's latency, counted (an OSError as a failed operation)."""
        with self.servers:
            if self.latency_s > 0:
                time.sleep(self.latency_s)
        try:
            result = work()
        except OSError as exc:
            with self._counting:
                self.counts[kind] += 1
                self.counts["failed"] += 1
            raise fuse.FuseOSError(exc.errno or errno.EIO) from None
        with self._counting:
            self.counts[kind] += 1
        return result

    def _counts_json(self) -> bytes:
        with self._counting:
            text = json.dumps(dict(sorted(self.counts.items()))).encode()
        return text.ljust(COUNTS_BYTES - 1) + b"\n"

    def getattr(self, path, fh=None):
        if path == COUNTS:
            return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": COUNTS_BYTES}
        st = self._served("getattr", lambda: os.lstat(self._real(path)))
        return {key: getattr(st, key) for key in _STAT_KEYS}

    def access(self, path, amode):
        if path == COUNTS:
            return 0
        if not self._served("access", lambda: os.access(self._real(path), amode)):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def readlink(self, path):
        return self._served("readlink", lambda: os.readlink(self._real(path)))

    def opendir(self, path):
        self._served("opendir", lambda: os.stat(self._real(path)))
        return 0

    def readdir(self, path, fh):
        names = self._served("readdir", lambda: os.listdir(self._real(path)))
        return [".", "..", *names]

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
            raise fuse.FuseOSError(errno.EROFS)
        if path == COUNTS:
            return 0
        return self._served("open", lambda: os.open(self._real(path), flags))

    def read(self, path, size, offset, fh):
        if path == COUNTS:
            return self._counts_json()[offset : offset + size]
        return os.pread(fh, size, offset)

    def release(self, path, fh):
        if path != COUNTS:
            os.close(fh)
        return 0

    def statfs(self, path):
        st = os.statvfs(self.root)
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
        return {key: getattr(st, key) for key in (*keys, "f_frsize", "f_namemax")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("mountpoint")
    parser.add_argument("--latency-ms", type=float, default=0.2, help="each metadata operation's wait")
    parser.add_argument("--servers", type=int, default=1, help="metadata operations served at once")
    args = parser.parse_args()
    if not os.path.isdir(args.source) or not os.path.isdir(args.mountpoint):
        parser.error("SOURCE and MOUNTPOINT must be folders")
    ops = SlowPassthrough(args.source, args.latency_ms / 1e3, max(args.servers, 1))
    fuse.FUSE(
        ops,
        args.mountpoint,
        foreground=True,
        nothreads=False,
        ro=True,
        allow_other=True,
        default_permissions=True,
        attr_timeout=1.0,
        entry_timeout=1.0,
        negative_timeout=0.0,
        fsname="slowfs",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
