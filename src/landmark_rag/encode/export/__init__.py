"""Exports of a loaded encoder for runtimes without torch (``onnx_query``: the query network
in ONNX, for a fast cold ``landmark-rag query``)."""
