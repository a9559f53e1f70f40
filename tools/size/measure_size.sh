#!/usr/bin/env bash
# Measures the stripped code size the Ember runtime core adds to an application:
# size(minimal_runner) - size(baseline), both built -c opt with -Os, section GC, no
# exceptions/RTTI and logging compiled out. Prints the sizes and the difference in bytes.
# Uses its own output directory (--platform_suffix) so other builds' caches are untouched.
#   tools/size/measure_size.sh            # target: < 40960 bytes on x86-64
#   NO_UNWIND=1 tools/size/measure_size.sh  # the same without unwind tables
set -euo pipefail
cd "$(dirname "$0")/../.."

# NO_UNWIND=1 also drops the unwind tables (-fno-asynchronous-unwind-tables: .eh_frame, about
# 6.7 KB here), as size-constrained builds of code without exceptions usually do; the
# default keeps them (debuggers and sanitizers' slow unwinder use them).
SUFFIX=-size
EXTRA=()
if [ "${NO_UNWIND:-0}" = 1 ]; then
  SUFFIX=-size-nounwind
  EXTRA=(--copt=-fno-asynchronous-unwind-tables --copt=-fno-unwind-tables)
fi
FLAGS=(
  -c opt --platform_suffix=$SUFFIX "${EXTRA[@]}"
  --copt=-Os --copt=-ffunction-sections --copt=-fdata-sections
  --copt=-fno-exceptions --copt=-fno-rtti --copt=-DEMBER_MIN_LOG_LEVEL=5 --copt=-DNDEBUG
  --linkopt=-Wl,--gc-sections --strip=always
)
bazel build "${FLAGS[@]}" //tools/size:minimal_runner //tools/size:baseline >&2
bazel build //tools/size:make_size_program >&2
BIN_OPT=$(bazel info "${FLAGS[@]}" bazel-bin 2>/dev/null)
BIN_DEV=$(bazel info bazel-bin 2>/dev/null)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BIN_DEV/tools/size/make_size_program" "$work/size.pte"
cp "$BIN_OPT/tools/size/minimal_runner" "$work/runner"
cp "$BIN_OPT/tools/size/baseline" "$work/baseline"
chmod u+w "$work/runner" "$work/baseline"
strip -s "$work/runner" "$work/baseline"

# Both must work: the runner computes x + 1.
out=$("$work/runner" "$work/size.pte")
if [ "$out" != "2 3 4 5" ]; then
  echo "minimal_runner failed: '$out'" >&2
  exit 1
fi
"$work/baseline" "$work/size.pte" >/dev/null

runner=$(stat -c %s "$work/runner")
baseline=$(stat -c %s "$work/baseline")
diff=$((runner - baseline))
echo "minimal_runner (stripped): $runner bytes"
echo "baseline       (stripped): $baseline bytes"
echo "runtime size: $diff bytes ($((diff / 1024)) KiB; target < 40960)"
# The file sizes move in 4 KiB steps (the linker starts the writable segment on a new page),
# so a change of a few hundred bytes may show as 0 or 4096 above. The bytes of the loaded
# sections (code, read-only data, unwind tables, dynamic linking, data; no .bss, no padding)
# show every byte:
loaded() {
  readelf -SW "$1" | python3 -c '
import re, sys
total = 0
for line in sys.stdin:
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+(\S*)", line)
    if m and m.group(2) not in ("NOBITS", "NULL") and "A" in m.group(4):
        total += int(m.group(3), 16)
print(total)'
}
loaded_runner=$(loaded "$work/runner")
loaded_baseline=$(loaded "$work/baseline")
echo "runtime loaded sections: $((loaded_runner - loaded_baseline)) bytes (runner $loaded_runner - baseline $loaded_baseline; no page padding)"
if [ "${1:-}" = "--details" ]; then
  cp "$BIN_OPT/tools/size/minimal_runner" "$work/runner_syms"
  echo "largest symbols:"
  nm --size-sort -r -C "$work/runner_syms" | head -30
fi
