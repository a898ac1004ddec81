#!/usr/bin/env bash
# One call to a lent GPU machine: set up from the carry folder, the throughput benchmark (unless
# SKIP_BENCH is set), then training schedules until the deadline (seconds from the start).
#
#   bash scripts/gpu/run_session.sh CARRY DEADLINE_S RUN[=CHECKPOINT_DIR] ...
set -uo pipefail
CARRY=$1; DEADLINE=$2; shift 2
T0=$(date +%s)
HERE=$(dirname "$0")
bash "$HERE/setup.sh" "$CARRY" || exit 1
[ -z "${SKIP_BENCH:-}" ] && bash "$HERE/bench.sh"
[ $# -gt 0 ] && bash "$HERE/train.sh" $(( DEADLINE - ($(date +%s) - T0) )) "$@"
