#!/usr/bin/env bash
# Builds the fuzzers, makes the seed corpora, and runs each fuzzer for SECONDS (default 30).
# Exits non-zero when a fuzzer finds a crash; the input is saved under
# out/fuzz/artifacts/<fuzzer>/ (turn it into a test under test/hardening/regressions/).
# The growing corpora live in out/fuzz/corpus/<fuzzer>/ and are reused by later runs.
# Usage: tools/fuzz/run_fuzzers.sh [SECONDS] [FUZZER...]
#   (fuzzers: pte_fuzzer ptd_fuzzer pt2_fuzzer tokenizer_fuzzer weights_index_fuzzer
#    vk_pipeline_cache_fuzzer)
# Extra libFuzzer flags: EMBER_FUZZ_FLAGS="-jobs=2 -workers=2" tools/fuzz/run_fuzzers.sh 600
# EMBER_FUZZ_RUNS_<fuzzer> (e.g. EMBER_FUZZ_RUNS_pte_fuzzer): stop after that many inputs (with a
# fixed -seed and a fresh corpus the run no longer depends on machine speed; SECONDS caps it).
set -uo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-30}
shift || true
FUZZERS=${*:-pte_fuzzer ptd_fuzzer pt2_fuzzer tokenizer_fuzzer weights_index_fuzzer vk_pipeline_cache_fuzzer}
OUT=${EMBER_FUZZ_OUT:-$(pwd)/out/fuzz}
export EMBER_FUZZ_OUT=$OUT

tools/fuzz/build_fuzzers.sh || { echo "run_fuzzers: build failed"; exit 1; }
tools/fuzz/make_seeds.sh "$OUT/seeds" || { echo "run_fuzzers: no seeds"; exit 1; }

failed=0
for f in $FUZZERS; do
  case $f in
    pte_fuzzer) seeds=$OUT/seeds/pte; extra="-max_len=262144" ;;
    ptd_fuzzer) seeds=$OUT/seeds/ptd; extra="-max_len=131072" ;;
    pt2_fuzzer) seeds=$OUT/seeds/pt2; extra="-max_len=65536 -dict=tools/fuzz/pt2.dict" ;;
    tokenizer_fuzzer) seeds=$OUT/seeds/tokenizer; extra="-max_len=131072 -dict=tools/fuzz/tokenizer.dict" ;;
    weights_index_fuzzer) seeds=$OUT/seeds/weights_index; extra="-max_len=4096" ;;
    vk_pipeline_cache_fuzzer) seeds=$OUT/seeds/vk_pipeline_cache; extra="-max_len=4096" ;;
    *) echo "run_fuzzers: unknown fuzzer $f"; exit 2 ;;
  esac
  runs_var=EMBER_FUZZ_RUNS_$f
  [ -n "${!runs_var:-}" ] && extra="$extra -runs=${!runs_var}"
  corpus=$OUT/corpus/$f
  artifacts=$OUT/artifacts/$f
  mkdir -p "$corpus" "$artifacts"
  echo "run_fuzzers: $f for ${SECONDS_EACH}s"
  # shellcheck disable=SC2086
  "$OUT/$f" "$corpus" "$seeds" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" $extra ${EMBER_FUZZ_FLAGS:-} \
    >"$OUT/$f.log" 2>&1
  rc=$?
  grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' "$OUT/$f.log" | tail -3
  if [ $rc -ne 0 ]; then
    echo "run_fuzzers: $f FAILED (exit $rc); see $OUT/$f.log and $artifacts/"
    grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written' "$OUT/$f.log" | head -5
    failed=1
  else
    echo "run_fuzzers: $f ok"
  fi
done
exit $failed
