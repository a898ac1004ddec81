# Sourced by the scripts/gpu scripts: the packages setup.sh unpacked, this checkout's source, no hub.
export PYTHONPATH=/tmp/gpu/site:$PWD/src HF_HUB_OFFLINE=1 LANDMARK_RAG_CACHE=/tmp/gpu/cache PYTHONUNBUFFERED=1
