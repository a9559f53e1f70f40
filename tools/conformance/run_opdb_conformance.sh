#!/usr/bin/env bash
# Nightly-style OpInfo conformance (not part of CI: generating the cases takes tens of minutes).
# Generates cases from PyTorch's op_db into DIR when DIR has none yet (delete DIR, or its
# summary.json, to regenerate), builds ember and writes docs/op-coverage-opdb.md.
#
# Usage: tools/conformance/run_opdb_conformance.sh [DIR] [SAMPLES]
#   DIR      where the generated cases live, outside the repository (default /tmp/opdb)
#   SAMPLES  float32 samples per OpInfo (default 2)
# Environment: JOBS (parallel generator processes and conformance cases, default 2).
# Needs PyPI torch with its test package's extra dependency: pip install torch expecttest
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR="${1:-/tmp/opdb}"
SAMPLES="${2:-2}"
JOBS="${JOBS:-2}"

if [[ ! -f "$DIR/summary.json" ]]; then
  echo "generating OpInfo cases into $DIR ($SAMPLES samples per OpInfo)"
  nice -n 10 python3 tools/conformance/generate_opinfo_cases.py "$DIR" --max-samples "$SAMPLES" --jobs "$JOBS"
fi
bazel build --jobs="$JOBS" //tools:ember
bazel-bin/tools/ember conformance "$DIR" --jobs "$JOBS" --markdown docs/op-coverage-opdb.md | tail -4
