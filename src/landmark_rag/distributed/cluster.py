"""Connecting to Ray: one place that turns an address into a session or one clear error.

Ray's own failure modes for a wrong address are a long hang (a GCS address that does not
answer is retried for minutes) or a traceback deep in gRPC. A team typing
``--ray ray://head:10001`` wants to know within seconds that nothing answers there, so an
explicit remote address is probed with a plain TCP connect before Ray is asked.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from landmark_rag.errors import LandmarkRagError

#: Seconds to wait for a remote Ray address to accept a TCP connection.
CONNECT_TIMEOUT_S = 5.0


class RayConnectionError(LandmarkRagError, ConnectionError):
    """No Ray cluster could be reached (or started) at the requested address."""


def connect(address: str | None = None, *, runtime_env: dict[str, Any] | None = None) -> None:
    """Make sure this process is connected to Ray.

    ``address``:

    - ``None``: reuse the session this process already has, else Ray's own default
      (``RAY_ADDRESS``, a cluster started with ``ray start`` on this machine, else a new
      local one);
    - ``"local"``: a new single-machine Ray in this process (no dashboard);
    - ``"auto"``: the cluster already running on this machine (``ray start --head``);
    - ``"ray://HOST:PORT"`` (Ray Client) or ``"HOST:PORT"`` (a head node's GCS): that cluster.

    An already initialised session is reused as it is: Ray allows one per process.
    """
    import ray

    remote = address not in (None, "", "local", "auto")
    if remote:
        _probe(str(address))  # even with a session open: a dead address is an error, not ignored
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"logging_level": "WARNING", "runtime_env": runtime_env}
    if address in (None, ""):
        target = None
    elif address == "local":
        target = "local"
        kwargs["include_dashboard"] = False
    else:
        target = address
    try:
        ray.init(address=target, **kwargs)
    except (ConnectionError, RuntimeError, TimeoutError, ValueError) as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "the default address"
        raise RayConnectionError(f"cannot connect to Ray at {where}: {exc}") from exc


def _probe(address: str) -> None:
    """TCP-connect to ``[ray://]HOST:PORT``; raise :class:`RayConnectionError` if nothing answers."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise RayConnectionError(f"bad Ray address {address!r}: expected local, auto, ray://HOST:PORT or HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise RayConnectionError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with `ray start --head` "
            "or pass --ray local"
        ) from None


def cluster_resources() -> dict[str, float]:
    """CPU / GPU totals of the connected cluster."""
    import ray

    return {k: float(v) for k, v in ray.cluster_resources().items()}


def node_resources() -> list[dict[str, float]]:
    """CPU / GPU totals of each live node of the connected cluster (what one actor can be given
    is bounded by its node, not by the cluster's totals)."""
    import ray

    return [
        {k: float(v) for k, v in (node.get("Resources") or {}).items()}
        for node in ray.nodes()
        if node.get("Alive", node.get("alive", False))
    ]
