#!/usr/bin/env bash
# The whole test suite on an offline CUDA host (scripts/gpu/README.md; needs setup.sh first, with
# the wheels that `pack_carry.py --tests` puts in whl-suite/: every extra of `.[all]`, the test
# extra and pytest-timeout). The encoder picks CUDA by default there, so every test that builds
# one without naming a device runs on the GPU. A module whose optional extra is missing skips
# (pytest.importorskip); one that fails to collect anyway is listed apart from real failures.
# Tests of shipped models fail when their adapters were moved out of the tree (weights_aside.sh).
#
# Each test has a time limit (TEST_TIMEOUT, 150 s). faulthandler dumps every thread's stack of a
# test still running at 120 s, even one waiting inside C; a test stuck in Python code then fails
# and the run goes on, while one stuck inside C (a device sync) holds the run until SUITE_TIMEOUT.
# Each test's outcome is written as it comes, and SUITE_TIMEOUT interrupts pytest (as Ctrl-C
# does) so that a run cut short still prints its summary.
#
#   bash scripts/gpu/suite.sh                        # tests/, one process, at most 8 minutes
#   TEST_DIRS="tests/encode tests/train" bash scripts/gpu/suite.sh
#   SUITE_WORKERS=4 bash scripts/gpu/suite.sh       # 4 processes (pytest-xdist)
set -uo pipefail
source "$(dirname "$0")/env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# one process unless SUITE_WORKERS says otherwise: pytest-xdist fails internally when a module
# does not collect
if [ -n "${SUITE_WORKERS:-}" ]; then SPREAD="-n $SUITE_WORKERS"; else SPREAD="-p no:xdist"; fi
# shellcheck disable=SC2086
timeout -s INT -k 30 "${SUITE_TIMEOUT:-480}" python3 -m pytest -v -rfE --tb=short --continue-on-collection-errors $SPREAD \
  --timeout "${TEST_TIMEOUT:-150}" --timeout-method signal -o faulthandler_timeout=120 \
  --durations 15 ${SUITE_ARGS:-} ${TEST_DIRS:-tests} > "$OUT/suite.log" 2>&1
echo "rc=$?"
python3 - "$OUT/suite.log" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
header = re.search(r"collected \d+ items? / (\d+) errors?", text)
collect = sorted(set(re.findall(r"^ERROR (\S+\.py)(?: - |$)", text, re.M)))
# the summary's lines ("FAILED id - message"), and the outcome lines written as tests ran
# ("id FAILED [ 10%]", or "[gw0] [ 10%] FAILED id" under xdist), so a run cut short still counts
def outcomes(word: str) -> list[str]:
    found = set(re.findall(rf"^{word} (\S+::.*?)(?: - .*)?$", text, re.M))
    found |= set(re.findall(rf"^(\S+::.*?) {word}\s+\[\s*\d+%\]$", text, re.M))
    found |= set(re.findall(rf"^\[gw\d+\] \[\s*\d+%\] {word} (\S+::.*?)\s*$", text, re.M))
    return sorted(found)
failed, errors = outcomes("FAILED"), outcomes("ERROR")
missing = sorted(set(re.findall(r"No module named '([^']+)'", text)))
over = len(re.findall(r"^E\s+Failed: Timeout \(>", text, re.M))
n_collect = max(len(collect), int(header.group(1)) if header else 0)
print(f"modules not collected: {n_collect} {' '.join(collect)} (missing: {', '.join(missing) or 'none'})")
print(f"failed: {len(failed)}; errors in fixtures: {len(errors)}; tests over the time limit: {over}")
for name in failed + errors:
    print("  " + name)
tail = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
print(tail[-1] if tail else "no summary line")
PY
