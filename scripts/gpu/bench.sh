#!/usr/bin/env bash
# The weight-free throughput benchmark on the GPU (needs setup.sh first).  Usage: bash scripts/gpu/bench.sh
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/gpu_throughput.py --device "${DEVICE:-cuda}" --json "$OUT/bench.json" ${BENCH_ARGS:-} \
  > "$OUT/bench.log" 2>&1
tail -16 "$OUT/bench.log"
