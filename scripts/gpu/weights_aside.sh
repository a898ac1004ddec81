#!/usr/bin/env bash
# Move the shipped adapters out of the working tree before copying the checkout to an offline GPU
# host (scripts/gpu/README.md), and back after. They are 61 MB and not needed to benchmark or
# train. The mpnet ones (44 MB) need their base model (438 MB), which the host has only with
# pack_mpnet.py's copy; without it the tests that need them skip. The test suite needs the rest.
#   bash scripts/gpu/weights_aside.sh out [mpnet|all]   # mpnet (default): landmark-mpnet and its releases
#   bash scripts/gpu/weights_aside.sh back              # restore whatever was moved
set -euo pipefail
cd "$(dirname "$0")/../.."
W=src/landmark_rag/weights
ASIDE=${WEIGHTS_ASIDE:-/tmp/models-aside}
case "${1:-}" in
  out)
    mkdir -p "$ASIDE/previous"
    if [ "${2:-mpnet}" = all ]; then
      picked=$(cd "$W" && ls -d landmark-* previous/landmark-*)
    else
      picked=$(cd "$W" && ls -d landmark-mpnet previous/landmark-mpnet-v*)
    fi
    for p in $picked; do
      [ -e "$ASIDE/$p" ] && { echo "$ASIDE/$p exists: run 'back' first" >&2; exit 1; }
      mv "$W/$p" "$ASIDE/$p"
    done
    ;;
  back)
    [ -d "$ASIDE" ] || { echo "nothing aside in $ASIDE"; exit 0; }
    for p in $(cd "$ASIDE" && ls -d landmark-* previous/landmark-* 2>/dev/null); do
      [ -e "$W/$p" ] && { echo "$W/$p exists: left $ASIDE/$p where it is" >&2; continue; }
      mv "$ASIDE/$p" "$W/$p"
    done
    rmdir "$ASIDE/previous" "$ASIDE" 2>/dev/null || true
    ;;
  *) echo "usage: $0 out [mpnet|all] | back" >&2; exit 2 ;;
esac
git ls-files -co --exclude-standard -z | du -ch --files0-from=- 2>/dev/null | tail -1 | sed 's/total/working tree (tracked and untracked files present)/'
