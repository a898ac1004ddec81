"""A real ``chroma run`` server on 127.0.0.1 for tests (loopback only), shared by every test
package that needs server mode, so start-up, readiness polling and shutdown live in one place."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_chroma(path: Path) -> Iterator[str]:
    """Start ``chroma run`` on a free loopback port over ``path``; yield its URL; stop it."""
    exe = Path(sys.executable).parent / "chroma"
    if not exe.exists():
        pytest.skip("the chroma console script is not installed next to this Python")
    port = free_port()
    proc = subprocess.Popen(
        [str(exe), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma server did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
