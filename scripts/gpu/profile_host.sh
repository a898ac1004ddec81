#!/usr/bin/env bash
# Where the host side's time goes on an offline GPU host (needs setup.sh first, with a py-spy
# wheel in the kit's whl/: pack_carry.py --with py-spy): py-spy samples benchmarks/gpu_throughput.py's host rows (the
# 1-layer model and the forward skipped; PROFILE_SKIP=st,bare,index,halves,host for the default alone) and writes collapsed stacks per thread to $OUT/host.txt;
# benchmarks/profile_split.py turns them into shares.   Usage: bash scripts/gpu/profile_host.sh
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
SPY=/tmp/gpu/site/bin/py-spy
[ -x "$SPY" ] || SPY=$(command -v py-spy) || { echo "py-spy missing"; exit 0; }
timeout "${PROFILE_TIMEOUT:-150}" "$SPY" record -r 200 -f raw --threads -o "$OUT/host.txt" -- \
  python3 benchmarks/gpu_throughput.py --device "${DEVICE:-cuda}" --skip "${PROFILE_SKIP:-st,bare,index,e2e,halves}" --rounds 2 \
  ${PROFILE_ARGS:-} > "$OUT/profile.log" 2>&1
gzip -f "$OUT/host.txt" 2>/dev/null
tail -12 "$OUT/profile.log"
