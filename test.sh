#!/usr/bin/env bash
# Runs the whole Ember test suite and prints "N passed, M failed" (gtest cases).
# Extra arguments are passed to `bazel test` (e.g. --config=asan). --keep_going: a target that
# fails to build is counted as failed (test_summary.py) without skipping the others.
# EMBER_TEST_TARGETS="//a:b //c:d" runs those instead of every test (CI's TSan step).
set -uo pipefail
cd "$(dirname "$0")"

targets=${EMBER_TEST_TARGETS:-$(bazel query 'tests(//...) except attr(tags, "manual", tests(//...))' 2>/dev/null)}
if [ -z "$targets" ]; then
  echo "no test targets found"
  echo "0 passed, 1 failed"
  exit 1
fi
# shellcheck disable=SC2086
shared="$(cd .. && pwd)/shared"
# Qualcomm's HTP library that ./setup.sh installed: the QNN tests then must load it (they skip,
# saying how to install it, only when it is absent).
qnn_env=()
qnn_lib="${XDG_CACHE_HOME:-$HOME/.cache}/ember/qnn/onnxruntime_qnn/libQnnHtp.so"
if [ -f "$qnn_lib" ]; then qnn_env=(--test_env=EMBER_QNN_LIBRARY="$qnn_lib"); fi
log=$(mktemp)
bazel test "$@" --keep_going --test_output=errors --test_env=EMBER_SHARED_DIR="$shared" "${qnn_env[@]}" $targets 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
python3 tools/test_summary.py --bazel-log "$log" "$(bazel info bazel-testlogs "$@" 2>/dev/null)" $targets
summary=$?
rm -f "$log"
if [ $status -ne 0 ] || [ $summary -ne 0 ]; then
  exit 1
fi
