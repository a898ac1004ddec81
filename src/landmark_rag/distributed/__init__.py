"""Distributed ingestion (the ``ray`` extra): ``landmark-rag index`` on a Ray cluster.

``ray_index`` runs the core ingest path - discovery, decoding, skip rules, the content-hash
skip, ``encode_documents``, the store's manifest protocol - in a Ray Data actor pool, one
model per actor, and writes into a Chroma server from every worker. Nothing here re-implements
the core; see docs/scaling.md. Importing this package imports ray; the core never does.
"""

from landmark_rag.distributed.cluster import RayConnectionError, connect
from landmark_rag.distributed.pipeline import StoreUnavailableError, ray_index
from landmark_rag.distributed.worker import EncodeWorker, InjectedFault

__all__ = ["EncodeWorker", "InjectedFault", "RayConnectionError", "StoreUnavailableError", "connect", "ray_index"]
