#!/usr/bin/env bash
# The main job on a real model: export the bundled Fashion-MNIST CNN (trained on Debian's
# dataset-fashion-mnist by tools/models/train_fashion_mnist.py, saved with torch.export) and
# its PT2E int8 twin with Ember's own exporter, then classify the bundled pictures (one per
# class, from the dataset's test set) with each and print the labels. Then export the bundled
# MobileNetV2 (the benchmark model; seeded random weights) for XNNPACK and time it. In between,
# write text with the bundled language model (examples/llm, trained on Debian's fortunes).
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
targets="//tools:ember //examples/fashion:classify_fashion"
bazel build -c opt $targets >/dev/null 2>&1 || bazel build -c opt $targets
mkdir -p out
E=bazel-bin/tools/ember
$E export examples/models/fashion_cnn.pt2 -o out/fashion_cnn.pte
$E export examples/models/fashion_cnn_int8_pt2e.pt2 -o out/fashion_cnn_int8.pte
echo "--- float32 ($(stat -c %s out/fashion_cnn.pte) bytes)"
bazel-bin/examples/fashion/classify_fashion out/fashion_cnn.pte examples/fashion/images/*.png
echo "--- int8 ($(stat -c %s out/fashion_cnn_int8.pte) bytes)"
bazel-bin/examples/fashion/classify_fashion out/fashion_cnn_int8.pte examples/fashion/images/*.png
echo "--- a language model trained on Debian's fortunes (examples/llm), greedy"
$E export examples/llm/fortunes_llm.pt2 -o out/fortunes_llm.pte --backend xnnpack $(sed 's/^/--metadata /' examples/llm/metadata.txt) >/dev/null
$E generate out/fortunes_llm.pte --tokenizer examples/llm/tokenizer.json --prompt "The best way to" --max-new-tokens 60
echo "--- MobileNetV2 on XNNPACK"
$E export examples/models/mobilenet_v2.pt2 -o out/mobilenet_v2.pte --backend xnnpack
$E bench out/mobilenet_v2.pte --threads 2 --iterations 20
