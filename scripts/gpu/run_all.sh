#!/usr/bin/env bash
# One run on an offline GPU host (scripts/gpu/README.md): set up from the kit folder, the
# random-weight throughput benchmark (unless SKIP_BENCH is set), then training schedules until
# the deadline (seconds from the start).
#
#   bash scripts/gpu/run_all.sh KIT DEADLINE_S RUN[=CHECKPOINT_DIR] ...
set -uo pipefail
KIT=$1; DEADLINE=$2; shift 2
T0=$(date +%s)
HERE=$(dirname "$0")
bash "$HERE/setup.sh" "$KIT" || exit 1
[ -z "${SKIP_BENCH:-}" ] && bash "$HERE/bench.sh"
[ $# -gt 0 ] && bash "$HERE/train.sh" $(( DEADLINE - ($(date +%s) - T0) )) "$@"
