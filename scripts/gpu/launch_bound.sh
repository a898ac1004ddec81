#!/usr/bin/env bash
# What would lift the default past the thread that launches its forward passes (needs setup.sh
# first). Two benchmark runs and a trace: the default (groups prepared together joined into one
# pass) beside each group run alone, every batch handing its mask over (read back on the device
# each pass), groups of at most 131,072 characters (the bound elsewhere; CUDA's is 524,288:
# fewer, larger passes) and
# sentence-transformers per sentence (for the ratio); then the default beside a shorter
# interpreter switch interval (the launching thread shares the lock with the one receiving
# prepared groups) and torch.compile, in its default mode and with CUDA graphs ("reduce-overhead":
# a recorded pass replays as one launch; COMPILE_MODES picks); then a device trace of one default call.
#
#   bash scripts/gpu/launch_bound.sh          # about 6 minutes on an H100 after setup
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# first what decides the default (sentence-transformers beside it, for the ratio), then the rest
timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/gpu_throughput.py --device "${DEVICE:-cuda}" --copies "${COPIES:-16}" ${LAUNCH_ARGS:-} \
  --separate-groups --mask-reads --task-chars 131072 --skip index,halves,host,bare --rounds 3 \
  --json "$OUT/launch.json" > "$OUT/launch.log" 2>&1
grep -E "^\||^-|random weights" "$OUT/launch.log"
timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/gpu_throughput.py --device "${DEVICE:-cuda}" --copies "${COPIES:-16}" ${LAUNCH_ARGS:-} \
  --switch-interval 0.0005 --compiled --compile-modes "${COMPILE_MODES:-default,reduce-overhead}" \
  --skip index,halves,host,st,bare --rounds 3 --json "$OUT/launch2.json" > "$OUT/launch2.log" 2>&1
# the per-row lines too: they survive a run cut short by the timeout
grep -E "^\||^-|compiling|tokens/s" "$OUT/launch2.log"
timeout 120 python3 scripts/gpu/trace_default.py --device "${DEVICE:-cuda}" --copies "${COPIES:-16}" ${TRACE_ARGS:-} --rows 12 > "$OUT/trace16.log" 2>&1
grep -E "tokens/s|summed kernel" "$OUT/trace16.log"
