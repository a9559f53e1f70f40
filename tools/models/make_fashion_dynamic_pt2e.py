#!/usr/bin/env python3
"""PT2E dynamic-activation twin of the Fashion-MNIST CNN (PyPI torch + torchao; not in CI).

Reads examples/models/fashion_cnn.pt2 (tools/models/train_fashion_mnist.py), quantizes it with
torchao's XNNPACK quantizer in its dynamic configuration (int8 weights per output channel, int8
activations whose scale and zero point `choose_qparams` computes on every call: PyTorch's
dynamic quantization, which covers the linear layers; the convolutions stay float) and writes
  examples/models/fashion_cnn_dynamic_pt2e.pt2   the converted program (torch.export.save)
  test/quant/data/dynamic_logits.npy            its eager logits on test/quant/data/images.npy
and prints its accuracy on the full test set when --full-test-dir holds images.npy/labels.npy
(what train_fashion_mnist.py --full-test-dir writes).

  python3 tools/models/make_fashion_dynamic_pt2e.py [--full-test-dir /tmp/fmnist]
"""
import argparse
import os

import numpy as np
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full-test-dir", default="")
    args = ap.parse_args()
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    float_model = torch.export.load(os.path.join(REPO, "examples/models/fashion_cnn.pt2")).module()
    images = torch.from_numpy(np.load(os.path.join(REPO, "test/quant/data/images.npy")))
    example = (images[:1],)
    captured = torch.export.export(float_model, example).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
    prepared = prepare_pt2e(captured, quantizer)
    prepared(*example)  # dynamic: no observers to calibrate, but prepare wants one run
    converted = convert_pt2e(prepared)
    ep = torch.export.export(converted, example)
    torch.export.save(ep, os.path.join(REPO, "examples/models/fashion_cnn_dynamic_pt2e.pt2"))
    with torch.no_grad():
        logits = torch.cat([converted(images[i:i + 1]) for i in range(images.shape[0])])
    np.save(os.path.join(REPO, "test/quant/data/dynamic_logits.npy"), logits.numpy().astype(np.float32))
    if args.full_test_dir:
        x = torch.from_numpy(np.load(os.path.join(args.full_test_dir, "images.npy")))
        y = np.load(os.path.join(args.full_test_dir, "labels.npy"))
        with torch.no_grad():
            pred = np.concatenate([converted(x[i:i + 1]).argmax(1).numpy() for i in range(x.shape[0])])
            fpred = np.concatenate([float_model(x[i:i + 1]).argmax(1).numpy() for i in range(x.shape[0])])
        print(f"dynamic int8 accuracy {100 * (pred == y).mean():.2f}% (float {100 * (fpred == y).mean():.2f}%) "
              f"on {len(y)} images")


if __name__ == "__main__":
    main()
