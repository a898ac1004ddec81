"""Distributed ingestion (the ``ray`` extra): ``landmark-rag index`` on a Ray cluster.

``ray_index`` runs the core's one write path (``ingest/write.py``: discovery, decoding, the
skip rule, grouping, encoding, the store's manifest protocol) in a Ray Data actor pool, one
model per actor, and writes into a Chroma server from every worker. Nothing here re-implements
the core; see docs/scaling.md. Importing this package imports ray; the core never does.
"""

from landmark_rag.distributed.cluster import RayConnectionError, connect
from landmark_rag.distributed.pipeline import StoreUnavailableError, ray_index
from landmark_rag.distributed.worker import EncodeWorker

__all__ = ["EncodeWorker", "RayConnectionError", "StoreUnavailableError", "connect", "ray_index"]
