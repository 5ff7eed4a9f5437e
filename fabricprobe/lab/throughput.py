"""Measure what a lab link really carries: a TCP stream from one host namespace to another (what
`lab status --throughput` prints next to the configured rate)."""

from __future__ import annotations

import subprocess
import sys
import time

from fabricprobe.lab.config import LabConfig

PORT = 47913
_SERVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0; t0 = None
while True:
    b = c.recv(1 << 20)
    if not b: break
    if t0 is None: t0 = time.perf_counter()
    n += len(b)
print(n, time.perf_counter() - t0, flush=True)
"""
_CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
chunk = bytes(1 << 20)
for _ in range(int(sys.argv[3])): c.sendall(chunk)
c.close()
"""


def measure(lab: LabConfig, src: int, dst: int, mib: int = 64) -> float:
    """Bit/s of one TCP stream from host `src` to host `dst` (receiver-timed)."""
    addr = lab.address(dst)
    server = subprocess.Popen(
        ["ip", "netns", "exec", lab.host_names[dst], sys.executable, "-c", _SERVER, addr, str(PORT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "ready"
        subprocess.run(
            ["ip", "netns", "exec", lab.host_names[src], sys.executable, "-c", _CLIENT, addr, str(PORT), str(mib)],
            check=True,
            timeout=300,
        )
        nbytes, seconds = server.stdout.readline().split()
        return float(nbytes) * 8 / max(float(seconds), 1e-9)
    finally:
        server.kill() if server.poll() is None else None
        server.wait()
        time.sleep(0.05)
