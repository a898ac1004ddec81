"""A real ``chroma run`` server on 127.0.0.1 for tests (loopback only), shared by every test
package that needs server mode (CLI, distributed, the fault suite), so start-up, readiness
polling, stopping (SIGKILL for faults) and restarting on the same data live in one place."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMA = Path(sys.executable).parent / "chroma"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ChromaServer:
    """A real ``chroma run`` on 127.0.0.1 that can be stopped (any signal) and started again on its data."""

    path: Path
    port: int
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        if not CHROMA.exists():
            pytest.skip("the chroma console script is not installed next to this Python")
        Path(self.path).mkdir(parents=True, exist_ok=True)
        log = (Path(self.path).parent / f"chroma-{self.port}.log").open("ab")
        self.proc = subprocess.Popen(
            [str(CHROMA), "run", "--host", "127.0.0.1", "--port", str(self.port), "--path", str(self.path)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()  # the child holds its own copy
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.alive():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma server exited with {self.proc.returncode}")
            time.sleep(0.2)
        raise TimeoutError("chroma server did not answer its heartbeat")

    def alive(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/api/v2/heartbeat", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@contextmanager
def running_chroma(path: Path) -> Iterator[str]:
    """Start ``chroma run`` on a free loopback port over ``path``; yield its URL; stop it."""
    server = ChromaServer(Path(path), free_port())
    server.start()
    try:
        yield server.url
    finally:
        server.stop(signal.SIGTERM)
