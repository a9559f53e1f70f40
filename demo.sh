#!/usr/bin/env bash
# The main job: export the bundled MobileNetV2 (.pt2 from torch.export) with Ember's own
# exporter, then classify a bundled picture with it and print the top-5 classes.
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
bazel build -c opt //tools:ember //examples/classify:classify >/dev/null 2>&1 || bazel build -c opt //tools:ember //examples/classify:classify
mkdir -p out
bazel-bin/tools/ember export examples/models/mobilenet_v2.pt2 -o out/mobilenet_v2.pte
bazel-bin/examples/classify/classify out/mobilenet_v2.pte examples/classify/sunset.png --threads 2
