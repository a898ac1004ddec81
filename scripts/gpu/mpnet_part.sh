#!/usr/bin/env bash
# Take one part of pack_mpnet.py's all-mpnet-base-v2 copy on an offline GPU host
# (scripts/gpu/README.md): checks its sha256 and keeps it in /tmp/gpu/mpnet-parts, sets the host up
# first when the folder also holds the wheels and the training set (pack_mpnet.py --setup), and
# prints which parts the host holds. With one part (the default) this is the only such step.
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
