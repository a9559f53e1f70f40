#!/usr/bin/env bash
# Seed corpora for the fuzzers, from the shared models and a few operator cases:
#   CORPUS/pte/  .pte files exported with bazel-bin/tools/ember (built when missing)
#   CORPUS/ptd/  .ptd data files (`ember export --external-weights`) of small models, float,
#                int8 and int4 weights, one appended to, and the ptd regression inputs
#   CORPUS/pt2/  the small .pt2 archives themselves
#   CORPUS/tokenizer/  the tokenizer.json files of test/llm/data
#   CORPUS/weights_index/  small XNNPACK packed-weights cache indexes and a block header
# Usage: tools/fuzz/make_seeds.sh [CORPUS_DIR]   (default out/fuzz/seeds)
# Needs ../shared (or $EMBER_SHARED_DIR); prints how many seeds it wrote.
set -uo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${1:-out/fuzz/seeds}
SHARED=${EMBER_SHARED_DIR:-$(cd .. && pwd)/shared}
if [ ! -d "$SHARED/models" ]; then
  echo "make_seeds: no shared models at $SHARED" >&2
  exit 1
fi
EMBER=bazel-bin/tools/ember
if [ ! -x "$EMBER" ]; then
  bazel build //tools:ember >/dev/null 2>&1 || { echo "make_seeds: cannot build //tools:ember" >&2; exit 1; }
fi
mkdir -p "$CORPUS/pte" "$CORPUS/ptd" "$CORPUS/pt2" "$CORPUS/tokenizer" "$CORPUS/weights_index" "$CORPUS/vk_pipeline_cache"

MODELS="dynamic_mlp small_cnn keyword_lstm"
OPCASES="add__0 mul__0 nn_functional_conv2d__0 nn_functional_layer_norm__0 cat__0 mean__0
  nn_functional_max_pool2d__0 index_select__0 log_softmax__0 matmul__0 gather__0 expand__0
  nn_functional_embedding__0 cumsum__0 nn_functional_pad__reflect__0 argmax__0 where__0
  nn_functional_interpolate__bilinear__0 clamp__0 permute__0"

n_pte=0
n_pt2=0
export_seed() {  # in.pt2 out.pte
  if [ ! -s "$2" ]; then
    "$EMBER" export "$1" -o "$2" >/dev/null 2>&1 || { rm -f "$2"; return 1; }
  fi
  n_pte=$((n_pte + 1))
}
for m in $MODELS; do
  export_seed "$SHARED/models/$m/model.pt2" "$CORPUS/pte/$m.pte" || echo "make_seeds: $m did not export (skipped)" >&2
done
# A bundled program (Program.bundled_cases, `ember export --bundle`): the fuzzers mutate the
# bundled tensors and their validation too.
if [ ! -s "$CORPUS/pte/small_cnn_bundled.pte" ]; then
  "$EMBER" export "$SHARED/models/small_cnn/model.pt2" -o "$CORPUS/pte/small_cnn_bundled.pte" \
      --bundle "$SHARED/models/small_cnn" >/dev/null 2>&1 || rm -f "$CORPUS/pte/small_cnn_bundled.pte"
fi
[ -s "$CORPUS/pte/small_cnn_bundled.pte" ] && n_pte=$((n_pte + 1))
# A program with a QNN delegate (blob, context binary, I/O descriptions): compiling it needs
# Qualcomm's library (./setup.sh installs it); without it the seed is skipped.
if [ ! -s "$CORPUS/pte/fashion_qnn.pte" ]; then
  "$EMBER" export examples/models/fashion_cnn_int8_pt2e.pt2 -o "$CORPUS/pte/fashion_qnn.pte" --backend qnn \
      --strict-delegation >/dev/null 2>&1 || { rm -f "$CORPUS/pte/fashion_qnn.pte"; echo "make_seeds: no QNN library: the QNN seed is skipped" >&2; }
fi
[ -s "$CORPUS/pte/fashion_qnn.pte" ] && n_pte=$((n_pte + 1))
cp "$SHARED/models/dynamic_mlp/model.pt2" "$CORPUS/pt2/dynamic_mlp.pt2" && n_pt2=$((n_pt2 + 1))
# Recurrent layers (the shared LSTM driver with GRU/RNN cells, packed-sequence validation)
# from the checked-in test models.
for m in gru_h0 rnn_relu_2layer_bidir lstm_proj_bidir; do
  export_seed "test/models/recurrent/$m/model.pt2" "$CORPUS/pte/$m.pte" || echo "make_seeds: $m did not export (skipped)" >&2
done
for c in $OPCASES; do
  d="$SHARED/opcases/$c"
  [ -d "$d" ] || continue
  for f in model core; do
    [ -f "$d/$f.pt2" ] || continue
    export_seed "$d/$f.pt2" "$CORPUS/pte/${c}_$f.pte" || true
    cp "$d/$f.pt2" "$CORPUS/pt2/${c}_$f.pt2" && n_pt2=$((n_pt2 + 1))
  done
done
# Programs from the repository: the tiny T5 encoder (its relative-position bias is mostly
# constant-folded; the exporter once wrote a program whose kernel wrote into a constant) as a
# valid program and archive, and the regression inputs themselves.
T5=test/hardening/models/t5_tiny/model.pt2
export_seed "$T5" "$CORPUS/pte/t5_tiny.pte" || echo "make_seeds: t5_tiny did not export (skipped)" >&2
cp "$T5" "$CORPUS/pt2/t5_tiny.pt2" && n_pt2=$((n_pt2 + 1))
# A program calling a custom operator (examples/custom_op; the harness gives the exporter its
# signature, so mutations reach the custom-operator import).
cp examples/custom_op/model.pt2 "$CORPUS/pt2/custom_op.pt2" && n_pt2=$((n_pt2 + 1))
# A mixture-of-experts decoder (grouped_mm_fallback, a no_grad subgraph to inline).
cp test/models/moe/olmoe/model.pt2 "$CORPUS/pt2/olmoe.pt2" && n_pt2=$((n_pt2 + 1))
# Quantized programs (quantization parameters as operator arguments, int8 constants): the PT2E
# twin lowered to ember_quantized:: operators, and Ember's own weight-only quantization.
export_seed examples/models/fashion_cnn_int8_pt2e.pt2 "$CORPUS/pte/fashion_cnn_int8_pt2e.pte" ||
  echo "make_seeds: fashion_cnn_int8_pt2e did not export (skipped)" >&2
if [ ! -s "$CORPUS/pte/fashion_cnn_int8_weight.pte" ]; then
  "$EMBER" export examples/models/fashion_cnn.pt2 -o "$CORPUS/pte/fashion_cnn_int8_weight.pte" \
      --quantize int8-weight >/dev/null 2>&1 || rm -f "$CORPUS/pte/fashion_cnn_int8_weight.pte"
fi
[ -s "$CORPUS/pte/fashion_cnn_int8_weight.pte" ] && n_pte=$((n_pte + 1))
# Program metadata and int4 weight-only operators (packed nibbles, group scales): the
# Fashion-MNIST CNN's linear layers in int4 (small: big seeds slow every fuzzing run down).
if [ ! -s "$CORPUS/pte/fashion_cnn_int4_metadata.pte" ]; then
  "$EMBER" export examples/models/fashion_cnn.pt2 -o "$CORPUS/pte/fashion_cnn_int4_metadata.pte" \
      --quantize int4-weight --group-size 32 --metadata max_seq_len=256 --metadata eos_id=0,2 \
      >/dev/null 2>&1 || rm -f "$CORPUS/pte/fashion_cnn_int4_metadata.pte"
fi
[ -s "$CORPUS/pte/fashion_cnn_int4_metadata.pte" ] && n_pte=$((n_pte + 1))
# XNNPACK delegates (the fuzzer links the backend, so blobs are verified, compiled into XNNPACK
# runtimes and run): fp32 with a static and a dynamic shape, partial delegation around a
# recurrent layer, the PT2E int8 twin (qs8 operators) and int4 weight-only linears (qd8).
export_flags_seed() {  # out-name in.pt2 [export flags...]
  local name=$1 in=$2
  shift 2
  if [ ! -s "$CORPUS/pte/$name.pte" ]; then
    "$EMBER" export "$in" -o "$CORPUS/pte/$name.pte" "$@" >/dev/null 2>&1 || rm -f "$CORPUS/pte/$name.pte"
  fi
  [ -s "$CORPUS/pte/$name.pte" ] || { echo "make_seeds: $name did not export (skipped)" >&2; return 1; }
  n_pte=$((n_pte + 1))
}
export_flags_seed small_cnn_xnnpack "$SHARED/models/small_cnn/model.pt2" --backend xnnpack
export_flags_seed dynamic_mlp_xnnpack "$SHARED/models/dynamic_mlp/model.pt2" --backend xnnpack
export_flags_seed keyword_lstm_xnnpack "$SHARED/models/keyword_lstm/model.pt2" --backend xnnpack
export_flags_seed fashion_cnn_int8_pt2e_xnnpack examples/models/fashion_cnn_int8_pt2e.pt2 --backend xnnpack
export_flags_seed fashion_cnn_int4_xnnpack examples/models/fashion_cnn.pt2 --backend xnnpack \
  --quantize int4-weight --group-size 32
for f in test/hardening/regressions/pte/*.pte; do
  cp "$f" "$CORPUS/pte/regression_$(basename "$f")" && n_pte=$((n_pte + 1))
done
# Data files: the weights of small models written beside their programs (the programs are
# not kept: the ptd fuzzer derives its own programs from each file's entries).
n_ptd=0
export_ptd_seed() {  # out-name in.pt2 [export flags...]
  local name=$1 in=$2 tmp
  shift 2
  if [ ! -s "$CORPUS/ptd/$name.ptd" ]; then
    tmp=$(mktemp -d)
    if "$EMBER" export "$in" -o "$tmp/model.pte" --external-weights "$tmp/weights.ptd" "$@" >/dev/null 2>&1; then
      cp "$tmp/weights.ptd" "$CORPUS/ptd/$name.ptd"
    fi
    rm -rf "$tmp"
  fi
  [ -s "$CORPUS/ptd/$name.ptd" ] || return 1
  n_ptd=$((n_ptd + 1))
}
for m in dynamic_mlp small_cnn; do
  export_ptd_seed "$m" "$SHARED/models/$m/model.pt2" || echo "make_seeds: $m.ptd not written (skipped)" >&2
done
export_ptd_seed fashion_cnn_int8_weight examples/models/fashion_cnn.pt2 --quantize int8-weight ||
  echo "make_seeds: fashion_cnn_int8_weight.ptd not written (skipped)" >&2
export_ptd_seed fashion_cnn_int4_weight examples/models/fashion_cnn.pt2 --quantize int4-weight --group-size 32 ||
  echo "make_seeds: fashion_cnn_int4_weight.ptd not written (skipped)" >&2
# Two programs' weights in one file (the second export appends to the first's file).
if [ ! -s "$CORPUS/ptd/appended.ptd" ]; then
  tmp=$(mktemp -d)
  if "$EMBER" export "$SHARED/models/dynamic_mlp/model.pt2" -o "$tmp/a.pte" --external-weights "$tmp/w.ptd" >/dev/null 2>&1 &&
     "$EMBER" export "$SHARED/models/small_cnn/model.pt2" -o "$tmp/b.pte" --external-weights "$tmp/w.ptd" >/dev/null 2>&1; then
    cp "$tmp/w.ptd" "$CORPUS/ptd/appended.ptd"
  fi
  rm -rf "$tmp"
fi
[ -s "$CORPUS/ptd/appended.ptd" ] && n_ptd=$((n_ptd + 1))
for f in test/hardening/regressions/ptd/*.ptd; do
  [ -e "$f" ] || continue
  cp "$f" "$CORPUS/ptd/regression_$(basename "$f")" && n_ptd=$((n_ptd + 1))
done
n_tok=0
for f in test/llm/data/*.json; do
  case $f in */refs.json) continue ;; esac  # the test strings, not a tokenizer
  cp "$f" "$CORPUS/tokenizer/$(basename "$f")" && n_tok=$((n_tok + 1))
done
# Packed-weights cache indexes (weights_index.h): 0, 1 and 3 entries (one ambiguous), and a
# block header. The fuzzer recomputes the trailing checksum itself, so it is left zero here.
python3 - "$CORPUS/weights_index" <<'PY'
import struct, sys
out = sys.argv[1]
def index(entries):
    b = b"EMBXWIDX" + struct.pack("<II", 1, len(entries)) + bytes(range(32))
    for seed, flags, k, bias, size in entries:
        b += struct.pack("<IIQQQ", seed, flags, k, bias, size) + bytes(16)
    return b + bytes(16)
seeds = {
    "empty.index": index([]),
    "one.index": index([(7, 0, 0, 2**64 - 1, 4096)]),
    "three.index": index([(7, 0, 0, 4096, 8192), (7, 1, 64, 2**64 - 1, 128), (9, 0, 0, 4096, 64)]),
    "block.bin": b"EMBXWBLK" + struct.pack("<IIQ", 1, 0, 64) + bytes(16) + bytes(96),
}
for name, data in seeds.items():
    open(f"{out}/{name}", "wb").write(data)
PY
n_windex=$(ls "$CORPUS/weights_index" | wc -l)
# Vulkan pipeline cache files (pipeline_cache_file.h): driver data of 32 and 100 bytes, and an
# empty one. The fuzzer recomputes the data digest itself, so it is left zero here.
python3 - "$CORPUS/vk_pipeline_cache" <<'PY'
import struct, sys
out = sys.argv[1]
vendor, device, driver, uuid = 0x10DE, 0x2330, 0x8A0C4000, bytes(range(0xA0, 0xB0))
def cache_file(payload):
    data = b"" if payload is None else struct.pack("<IIII", 32, 1, vendor, device) + uuid + payload
    head = b"EMBRVKPC" + struct.pack("<IIII", 1, vendor, device, driver) + uuid + struct.pack("<Q", len(data))
    return head + bytes(16) + data
for name, payload in {"header_only.bin": b"", "payload.bin": bytes(range(68)), "empty.bin": None}.items():
    open(f"{out}/{name}", "wb").write(cache_file(payload))
PY
chmod -R u+w "$CORPUS"
echo "make_seeds: $n_pte .pte, $n_ptd .ptd, $n_pt2 .pt2, $n_tok tokenizer.json, $n_windex weights-index and" \
  "$(ls "$CORPUS/vk_pipeline_cache" | wc -l) Vulkan pipeline-cache seeds in $CORPUS"
