#!/usr/bin/env bash
# The encoder's GPU checks (needs setup.sh first): the tests that once failed on a CUDA host,
# and the CUDA path's vectors against the CPU's fp32 ones (scripts/gpu/check_encoder.py).
#
#   bash scripts/gpu/check_encoder.sh
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 240 python3 -m pytest -q -p no:cacheprovider \
  "tests/encode/test_attention.py::test_text_states_equal_the_plain_window" tests/encode/test_parallel.py \
  tests/train/test_resume.py "tests/train/test_train_end_to_end.py::test_lora_mean_loss_falls_and_adapter_reloads" \
  tests/encode/test_pipeline.py tests/encode/test_padding_mask.py tests/train/test_train_pipeline.py 2>&1 | tee "$OUT/tests.log" | tail -6
timeout 150 python3 scripts/gpu/check_encoder.py --articles "${CHECK_ARTICLES:-8}" 2>&1 | tee "$OUT/check.log" | grep -v Warning
