#!/usr/bin/env bash
# What a selective kernel build saves: stripped sizes of the same application
# (tools/size/model_runner.cc, Module API) linked with every portable kernel, or only with the
# kernels of MobileNetV2's operators (`ember ops --format=list`), with and without the
# XNNPACK delegate; plus the runtime core (measure_size.sh). Same flags as measure_size.sh
# (-c opt -Os, section GC, no exceptions/RTTI, stripped). Every runner must reproduce
# MobileNetV2's reference output, and the selective one must refuse a program with another
# operator, naming it ("not in this build").
#   tools/size/measure_selective.sh [MODEL_DIR]   # default ../shared/models/mobilenet_v2
# Prints a Markdown table (README.md "Size" has its result).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:-../shared/models/mobilenet_v2}
MODEL=$(cd "$MODEL" && pwd)
NAME=$(basename "$MODEL")

FLAGS=(
  -c opt --platform_suffix=-size
  --copt=-Os --copt=-ffunction-sections --copt=-fdata-sections
  --copt=-fno-exceptions --copt=-fno-rtti --copt=-DEMBER_MIN_LOG_LEVEL=5 --copt=-DNDEBUG
  --linkopt=-Wl,--gc-sections --strip=always
)
JOBS=(--jobs="${JOBS:-2}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bazel build "${JOBS[@]}" //tools:ember >&2
EMBER=$(bazel info bazel-bin 2>/dev/null)/tools/ember
"$EMBER" export "$MODEL/model.pt2" -o "$work/$NAME.pte" >&2
"$EMBER" export "$MODEL/model.pt2" -o "$work/${NAME}_xnnpack.pte" --backend xnnpack >&2
# A program with operators MobileNetV2 lacks, for the "not in this build" check.
"$EMBER" export ../shared/models/small_cnn/model.pt2 -o "$work/small_cnn.pte" >&2

# An @ember_selected_ops repository holding `ember ops --format=list PROGRAM`.
selection() {  # $1 = program; prints the directory
  local dir="$work/selection_$(basename "$1" .pte)"
  mkdir -p "$dir"
  cp kernels/portable/selection/WORKSPACE kernels/portable/selection/BUILD "$dir/"
  "$EMBER" ops --format=list "$1" >"$dir/ops.txt"
  echo "$dir"
}
BIN=$(bazel info "${FLAGS[@]}" bazel-bin 2>/dev/null)
runner() {  # $1 = target, $2 = copy name, [$3 = selection dir]
  local override=()
  [ -n "${3:-}" ] && override=(--override_repository=ember_selected_ops="$3")
  bazel build "${JOBS[@]}" "${FLAGS[@]}" "${override[@]}" "//tools/size:$1" >&2
  cp "$BIN/tools/size/$1" "$work/$2"
  chmod u+w "$work/$2"
  strip -s "$work/$2"
}
runner model_runner_all all
runner model_runner_all_xnnpack all_xnnpack
sel=$(selection "$work/$NAME.pte")
runner model_runner_selected selected "$sel"
sel_xnn=$(selection "$work/${NAME}_xnnpack.pte")
runner model_runner_selected_xnnpack selected_xnnpack "$sel_xnn"

check() {  # $1 = runner, $2 = program
  "$work/$1" "$work/$2" "$MODEL/input_0.npy" "$MODEL/output_0.npy" >&2 ||
    { echo "measure_selective.sh: $1 on $2 failed" >&2; exit 1; }
}
check all "$NAME.pte"
check all_xnnpack "${NAME}_xnnpack.pte"
check selected "$NAME.pte"
check selected_xnnpack "${NAME}_xnnpack.pte"
if refusal=$("$work/selected" "$work/small_cnn.pte" "$MODEL/input_0.npy" "$MODEL/output_0.npy" 2>&1); then
  echo "measure_selective.sh: the $NAME-only runner ran small_cnn" >&2; exit 1
fi
case "$refusal" in
  *"not in this build"*) ;;
  *) echo "measure_selective.sh: unexpected refusal: $refusal" >&2; exit 1 ;;
esac

core=$(tools/size/measure_size.sh 2>/dev/null | sed -n 's/^runtime size: \([0-9]*\) bytes.*/\1/p')
size() { stat -c %s "$work/$1"; }
kernels() { grep -vc '^#' "$1/ops.txt" || true; }
cat <<TABLE
| stripped x86-64 binary (tools/size/measure_selective.sh) | bytes |
|---|---:|
| runtime core (measure_size.sh: minimal_runner - baseline) | $core |
| model_runner, all portable kernels | $(size all) |
| model_runner, all portable kernels + XNNPACK | $(size all_xnnpack) |
| model_runner, $NAME's $(kernels "$sel") operators only (portable) | $(size selected) |
| model_runner, $NAME via XNNPACK ($(kernels "$sel_xnn") portable operators) | $(size selected_xnnpack) |
TABLE
echo
echo "the $NAME-only runner on small_cnn.pte: $refusal"
