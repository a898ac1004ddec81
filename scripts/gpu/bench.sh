#!/usr/bin/env bash
# The weight-free throughput benchmark on the GPU (needs setup.sh first).  Usage: bash scripts/gpu/bench.sh
# It first times one preparation worker on this host (one tokenizer thread): the GPU default is
# bound by its pool of them, so that rate, times the workers the host's cores carry, is its ceiling.
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RAYON_NUM_THREADS=1 timeout 60 python3 benchmarks/prepare_workers.py worker --rounds 5 > "$OUT/worker.json" 2> "$OUT/worker.log"
cat "$OUT/worker.json"
timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/gpu_throughput.py --device "${DEVICE:-cuda}" --json "$OUT/bench.json" ${BENCH_ARGS:-} \
  > "$OUT/bench.log" 2>&1
tail -16 "$OUT/bench.log"
