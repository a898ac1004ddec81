"""Where the device's time goes in one default ``encode_documents`` call (a GPU host,
after setup.sh): torch.profiler over the call, with random weights of all-MiniLM-L6-v2's
architecture (``benchmarks/gpu_throughput.py``'s model). Prints the wall time, the summed
kernel time (device busy share) and the kernels and host operators that take the most.

    python scripts/gpu/trace_default.py [--copies 4] [--device cuda]
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--articles", type=int, default=24)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", type=int, default=22)
    args = ap.parse_args()
    from gpu_throughput import build_model_dir, load_texts

    from landmark_rag.encode.encoder import LandmarkEncoder

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    texts = load_texts(REPO / "data" / "squad-v1.1-dev-part-a.json", args.articles, args.copies)
    scratch = tempfile.mkdtemp(prefix="trace-default-")
    atexit.register(shutil.rmtree, scratch, True)
    enc = LandmarkEncoder.from_pretrained(build_model_dir("minilm", Path(scratch) / "m"), device=device)
    enc.encode_documents(texts)  # warm-up: workers, kernels, allocator
    fresh = [f"{t} Again." for t in texts]
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    docs = enc.encode_documents(fresh)
    if cuda:
        torch.cuda.synchronize()
    plain = time.perf_counter() - t0
    tokens = sum(d.tokens or 0 for d in docs)
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    fresh = [f"{t} Once more." for t in texts]
    with torch.profiler.profile(activities=acts) as prof:
        t0 = time.perf_counter()
        enc.encode_documents(fresh)
        if cuda:
            torch.cuda.synchronize()
        traced = time.perf_counter() - t0
    events = prof.key_averages()
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    busy = sum(getattr(e, attr, 0) for e in events if (not cuda or e.device_type == torch.autograd.DeviceType.CUDA))
    print(f"{tokens:,} tokens; untraced {plain:.3f} s = {tokens / plain:,.0f} tokens/s; traced {traced:.3f} s")
    if cuda:
        print(f"summed kernel time {busy / 1e6:.3f} s = {busy / 1e6 / traced:.1%} of the traced wall time")
    print(events.table(sort_by=attr, row_limit=args.rows, max_name_column_width=70))
    if cuda:
        print(events.table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=70))


if __name__ == "__main__":
    main()
