#!/usr/bin/env bash
# Training schedules side by side on the GPU until a deadline (needs setup.sh first), then what
# is worth keeping packed into $OUT (scripts/gpu/pack_runs.py).
#
#   bash scripts/gpu/train.sh DEADLINE_S RUN[=CHECKPOINT_DIR] ...
#
# RUN is a config in docs/experiments/runs/ (without .json); RUN=DIR resumes it from a checkpoint
# (OUTPUT/checkpoints/step-N, optimiser state included): a path in the checkout, or an absolute one
# such as /tmp/runs/NAME/checkpoints/step-800 that an earlier run left on the host.
# Each run trains with --device cuda --mixed-precision bf16, checkpoints every 400 steps, and is
# stopped at the deadline (seconds from now) if not done; its latest checkpoint is then packed
# for the next --resume.
set -uo pipefail
source "$(dirname "$0")/env.sh"
DEADLINE=$1; shift
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/runs
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
for spec in "$@"; do
  name=${spec%%=*}; resume=""
  ckpt=${spec#*=}; [ "${ckpt#/}" = "$ckpt" ] && ckpt=$PWD/$ckpt  # relative to the checkout, or absolute (/tmp/runs/...)
  [ "$spec" != "$name" ] && resume="--resume $ckpt"
  timeout --signal=INT $(( $(left) - 20 )) python3 -c "from landmark_rag.cli import main; main()" train \
    -c "docs/experiments/runs/$name.json" -o "/tmp/runs/$name" --device "${DEVICE:-cuda}" \
    --mixed-precision "${MP:-bf16}" --threads "${THREADS:-3}" $resume > "/tmp/runs/$name.log" 2>&1 &
done
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt 20 ]; do
  sleep 15
  for spec in "$@"; do n=${spec%%=*}; printf '%s: %s\n' "$n" "$(tr '\r' '\n' < /tmp/runs/$n.log | grep -E 'training:|validation' | tail -1 | cut -c1-150)"; done
done
wait
python3 scripts/gpu/pack_runs.py /tmp/runs "$OUT" "$@"
ls -la "$OUT"
