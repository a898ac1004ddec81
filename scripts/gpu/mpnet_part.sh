#!/usr/bin/env bash
# One call of the landmark-mpnet sequence on a lent GPU machine (docs/experiments/training-gpu.md,
# "landmark-mpnet on a lent GPU"): keeps the all-mpnet-base-v2 part this call carried (made by
# scripts/gpu/pack_mpnet.py) in /tmp/gpu/mpnet-parts after checking its sha256, sets the machine up
# first when the folder also holds the wheels and the training set (pack_mpnet.py --setup), and
# prints which parts the machine holds.
#
#   bash scripts/gpu/mpnet_part.sh .dev/mpnetK
#
# MPNET_SKIP_SETUP=1 skips the setup; MPNET_PARTS_DIR moves the parts (a local rehearsal).
set -euo pipefail
HERE=$(dirname "$0")
if [ -z "${MPNET_SKIP_SETUP:-}" ] && { [ -d "$1/whl" ] || [ -f "$1/general-v1.tar" ]; }; then
  bash "$HERE/setup.sh" "$1"
fi
"${PYTHON:-python3}" "$HERE/mpnet_parts.py" take "$1"
