#!/usr/bin/env bash
# Long fuzzing campaigns on a machine without Debian's packages or Bazel (the device machine's
# CPUs): pack the fuzzers, their shared libraries, seeds, dictionaries and corpora here, run
# every target at once there, bring the summary, grown corpora and crashes back.
#
#   tools/fuzz/campaign.sh pack DIR [TARGET...]
#       Builds the fuzzers and the hostile-program generator (tools/fuzz/build_fuzzers.sh; the
#       same EMBER_FUZZ_* variables choose the build) and the seeds, and copies the TARGETs
#       (default: every fuzzer and hostile_programs) with every shared library they link but
#       glibc's into DIR, with their seeds and the corpora of EMBER_FUZZ_OUT (default out/fuzz).
#       The device machine takes 64 MiB with the repository: pack a few targets per run.
#   DIR/campaign.sh run DIR SECONDS SEED RESULTS [TARGET=WORKERS ...] [hostile=WORKERS@FIRST]
#       Runs each TARGET with libFuzzer's -fork=WORKERS from -seed=SEED for SECONDS, all at
#       once; hostile=W@F runs W generator processes over consecutive chunks of seeds from F
#       until SECONDS pass. RESULTS gets summary.tsv (target, workers, executions, coverage,
#       corpus, crashes), each log, the crash inputs and corpus-<target>.tar.xz.
#   tools/fuzz/campaign.sh unpack RESULTS
#       Merges the corpora brought back into EMBER_FUZZ_OUT's and lists the crash inputs.
set -uo pipefail

die() { echo "campaign: $*" >&2; exit 1; }
HOSTILE_CHUNK=10000  # generator seeds per process
targets_all="pte_fuzzer ptd_fuzzer pt2_fuzzer tokenizer_fuzzer weights_index_fuzzer vk_pipeline_cache_fuzzer"

# libFuzzer options per target (as tools/fuzz/run_fuzzers.sh gives them).
target_flags() {
  case $1 in
    pte_fuzzer) echo "-max_len=262144" ;;
    ptd_fuzzer) echo "-max_len=131072" ;;
    pt2_fuzzer) echo "-max_len=65536 -dict=$2/dict/pt2.dict" ;;
    tokenizer_fuzzer) echo "-max_len=131072 -dict=$2/dict/tokenizer.dict" ;;
    weights_index_fuzzer | vk_pipeline_cache_fuzzer) echo "-max_len=4096" ;;
    *) return 1 ;;
  esac
}
seed_dir() { echo "${1%_fuzzer}"; }

copy_libs() {  # binary libdir: every shared library but glibc's own
  ldd "$1" | awk '$3 ~ /^\// {print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do
      [ -e "$2/$(basename "$lib")" ] && continue
      cp -L "$lib" "$2/" && chmod u+w "$2/$(basename "$lib")" && strip --strip-debug "$2/$(basename "$lib")"
    done
}

pack() {  # dir [target...]: default every fuzzer and the generator
  local dir=$1 root out f
  shift
  local targets=${*:-$targets_all hostile_programs}
  root=$(cd "$(dirname "$0")/../.." && pwd)
  cd "$root" || exit 1
  out=${EMBER_FUZZ_OUT:-$root/out/fuzz}
  tools/fuzz/build_fuzzers.sh || die "fuzzer build failed"
  tools/fuzz/make_seeds.sh "$out/seeds" || die "no seeds"
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/dict" "$dir/corpus" "$dir/seeds"
  for f in $targets; do
    # Symbols stay (crash stacks name functions); the debug sections would not fit the carry.
    strip --strip-debug -o "$dir/bin/$f" "$out/$f" || die "no $out/$f"
    copy_libs "$out/$f" "$dir/lib"
    [ "$f" = hostile_programs ] && continue
    if [ -d "$out/corpus/$f" ]; then cp -r "$out/corpus/$f" "$dir/corpus/$f"; fi
    cp -r "$out/seeds/$(seed_dir "$f")" "$dir/seeds/"
  done
  cp tools/fuzz/pt2.dict tools/fuzz/tokenizer.dict "$dir/dict/"
  cp tools/fuzz/campaign.sh "$dir/campaign.sh"
  git rev-parse HEAD >"$dir/commit" 2>/dev/null || true
  du -sh "$dir"
}

# One worker of the generator: chunks of CHUNK seeds, FIRST + k * STRIDE * CHUNK for its
# index, until the deadline. A chunk that fails (a crash or a failed expectation) is rerun
# with each seed traced so the log names the seed.
hostile_worker() {  # dir results index workers first deadline
  local dir=$1 res=$2 i=$3 w=$4 first=$5 deadline=$6 chunk=$HOSTILE_CHUNK k=0 start log
  log=$res/hostile-$i.log
  while [ "$(date +%s)" -lt "$deadline" ]; do
    start=$((first + (k * w + i) * chunk))
    if ! LD_LIBRARY_PATH=$dir/lib UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 EMBER_HOSTILE_FIRST=$start EMBER_HOSTILE_PROGRAMS=$chunk \
         "$dir/bin/hostile_programs" >"$log.chunk" 2>&1; then
      echo "FAILED chunk $start $chunk" >>"$log"
      grep -E "Failure|seed|ERROR|error" "$log.chunk" | head -20 >>"$log"
      LD_LIBRARY_PATH=$dir/lib UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 EMBER_HOSTILE_TRACE=1 EMBER_HOSTILE_FIRST=$start EMBER_HOSTILE_PROGRAMS=$chunk \
        timeout 600 "$dir/bin/hostile_programs" 2>&1 | tail -40 >>"$log"
    else
      grep -E "programs: " "$log.chunk" | sed "s/^/ok $start: /" >>"$log"
    fi
    k=$((k + 1))
  done
  rm -f "$log.chunk"
}

run() {
  local dir=$1 secs=$2 seed=$3 res=$4 spec t w flags deadline
  shift 4
  dir=$(cd "$dir" && pwd)
  mkdir -p "$res/crashes"
  res=$(cd "$res" && pwd)
  export LD_LIBRARY_PATH=$dir/lib
  deadline=$(($(date +%s) + secs))
  local pids=()
  for spec in "$@"; do
    t=${spec%%=*}
    w=${spec#*=}
    if [ "$t" = hostile ]; then
      local hw=${w%@*} hfirst=${w#*@} i
      for ((i = 0; i < hw; i++)); do
        hostile_worker "$dir" "$res" "$i" "$hw" "$hfirst" "$deadline" &
        pids+=($!)
      done
      echo "hostile	$hw	first seed $hfirst" >"$res/hostile.spec"
      continue
    fi
    flags=$(target_flags "$t" "$dir") || die "unknown target $t"
    mkdir -p "$dir/corpus/$t" "$res/crashes/$t"
    echo "$t	$w" >"$res/$t.spec"
    # shellcheck disable=SC2086
    "$dir/bin/$t" "$dir/corpus/$t" "$dir/seeds/$(seed_dir "$t")" -fork="$w" -ignore_crashes=1 -seed="$seed" \
      -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$res/crashes/$t/" $flags \
      >"$res/$t.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  summarize "$dir" "$res"
  # What comes back from the device machine is a few files: one archive of the summary, logs
  # and crash inputs, and one xz archive per grown corpus (small next to the 16 MiB limit).
  (cd "$res" && tar czf results.tar.gz summary.tsv ./*.log crashes && rm -rf ./*.log ./*.spec crashes)
}

summarize() {  # dir results
  local dir=$1 res=$2 spec t w last execs cov corp crashes
  {
    printf 'target\tworkers\texecutions\tcoverage\tcorpus\tcrash inputs\n'
    for spec in "$res"/*_fuzzer.spec; do
      [ -e "$spec" ] || continue
      read -r t w <"$spec"
      last=$(grep -E '^#[0-9]+: cov:' "$res/$t.log" | tail -1)
      execs=$(echo "$last" | sed -E 's/^#([0-9]+):.*/\1/')
      cov=$(echo "$last" | sed -E 's/.* cov: ([0-9]+).*/\1/')
      corp=$(ls "$dir/corpus/$t" | wc -l)
      crashes=$(ls "$res/crashes/$t" 2>/dev/null | wc -l)
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$w" "${execs:-0}" "${cov:-0}" "$corp" "$crashes"
      tar cf - -C "$dir/corpus" "$t" | xz -T0 -6 >"$res/corpus-$t.tar.xz"
    done
    if [ -e "$res/hostile.spec" ]; then
      local programs failed
      programs=$(cat "$res"/hostile-*.log 2>/dev/null | grep -c '^ok ')
      failed=$(cat "$res"/hostile-*.log 2>/dev/null | grep -c '^FAILED')
      printf 'hostile_programs\t%s\t%s programs\t-\t-\t%s failed chunks\n' "$(cut -f2 "$res/hostile.spec")" \
        "$((programs * HOSTILE_CHUNK))" "$failed"
    fi
  } >"$res/summary.tsv"
  cat "$res/summary.tsv"
}

unpack() {
  local res=$1 root out f t
  root=$(cd "$(dirname "$0")/../.." && pwd)
  out=${EMBER_FUZZ_OUT:-$root/out/fuzz}
  if [ -f "$res/results.tar.gz" ] && [ ! -d "$res/crashes" ]; then tar xzf "$res/results.tar.gz" -C "$res"; fi
  for f in "$res"/corpus-*.tar.xz; do
    [ -e "$f" ] || continue
    t=$(basename "$f" .tar.xz)
    t=${t#corpus-}
    mkdir -p "$out/corpus/$t"
    tar xJf "$f" -C "$out/corpus" --skip-old-files
    echo "campaign: $t corpus now $(ls "$out/corpus/$t" | wc -l) inputs"
  done
  find "$res/crashes" -type f 2>/dev/null | sed 's/^/campaign: crash input /'
}

cmd=${1:-}
shift || true
case $cmd in
  pack) [ $# -ge 1 ] || die "usage: campaign.sh pack DIR [TARGET...]"; pack "$@" ;;
  run) [ $# -ge 5 ] || die "usage: campaign.sh run DIR SECONDS SEED RESULTS TARGET=WORKERS..."; run "$@" ;;
  unpack) [ $# -eq 1 ] || die "usage: campaign.sh unpack RESULTS"; unpack "$1" ;;
  *) die "usage: campaign.sh pack DIR | run DIR SECONDS SEED RESULTS TARGET=WORKERS... | unpack RESULTS" ;;
esac
