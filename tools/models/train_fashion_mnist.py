#!/usr/bin/env python3
"""Trains a small CNN on Fashion-MNIST (Debian's dataset-fashion-mnist package) and writes the
models and data Ember's quantization tests and demo use:

  examples/models/fashion_cnn.pt2            float32 model, input [1, 1, 28, 28] in [0, 1]
  examples/models/fashion_cnn_int8_pt2e.pt2  its PT2E int8 twin: torchao's prepare_pt2e /
                                             calibrate / convert_pt2e with the XNNPACK quantizer
                                             (per-channel symmetric int8 weights, per-tensor
                                             int8 activations): quantized_decomposed Q/DQ ops
                                             around float ops, int8 weight constants
  test/quant/data/images.npy                 the first --subset test images, float32 [S, 1, 28, 28]
  test/quant/data/labels.npy                 their labels, int64 [S]
  test/quant/data/calibration.npy            the first 64 training images, float32 [64, 1, 28, 28]
                                             (calibration for `ember export --quantize int8`)
  test/quant/data/{fp32,int8}_logits.npy     eager PyTorch outputs of both models on them
  test/quant/data/accuracy.json              eager accuracy of both models on all 10,000 test images
  examples/fashion/images/NN_<class>.png     the first test image of each class (the demo's pictures)

--full-test-dir DIR also writes the whole test set (images.npy, labels.npy; 31 MB) for
`ember eval` (docs/quantization.md). PyPI's torch and torchao; CPU is enough (a few minutes).

Usage: python3 tools/models/train_fashion_mnist.py [--epochs 4] [--subset 100] [--full-test-dir DIR]
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def read_idx(name):
    """An idx file of the dataset package: images [N, 28, 28] uint8 or labels [N] uint8."""
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        sys.exit(f"{path} not found: apt-get install dataset-fashion-mnist")
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    if magic == 2051:
        n, rows, cols = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, rows, cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, offset=8)
    sys.exit(f"{path}: not an idx file (magic {magic})")


class FashionCNN(nn.Module):
    """Two conv blocks and two linear layers, ~106k parameters; input [B, 1, 28, 28] in [0, 1]."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def slug(name):
    return "".join(c if c.isalnum() else "_" for c in name.lower())


def write_gray_png(path, image):
    """An 8-bit grayscale PNG (no dependency beyond zlib)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    h, w = image.shape
    raw = b"".join(b"\x00" + image[y].tobytes() for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def to_input(images):
    return torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)


def accuracy(model, x, y, batch=1000):
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return 100.0 * correct / len(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--subset", type=int, default=100)
    ap.add_argument("--calibration", type=int, default=512, help="training images used to calibrate PT2E")
    ap.add_argument("--full-test-dir")
    args = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    train_x, train_y = to_input(read_idx("train-images-idx3-ubyte.gz")), torch.from_numpy(read_idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    test_x, test_y = to_input(read_idx("t10k-images-idx3-ubyte.gz")), torch.from_numpy(read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))

    model = FashionCNN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * (len(train_x) // 128))
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(train_x))
        for i in range(0, len(train_x) - 127, 128):
            idx = perm[i:i + 128]
            loss = nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {accuracy(model, test_x, test_y):.2f}%", flush=True)
    model.eval()
    fp32_acc = accuracy(model, test_x, test_y)

    example = (test_x[:1].clone(),)  # a view would save the whole test set as the example input
    models_dir = os.path.join(ROOT, "examples", "models")
    ep = torch.export.export(model, example)
    torch.export.save(ep, os.path.join(models_dir, "fashion_cnn.pt2"))

    # PT2E: export for training IR, annotate, calibrate, convert, export again.
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    captured = torch.export.export(model, example).module()
    prepared = prepare_pt2e(captured, quantizer)
    with torch.no_grad():
        for i in range(args.calibration):
            prepared(train_x[i:i + 1])
    quantized = convert_pt2e(prepared)
    with torch.no_grad():
        int8_logits_all = torch.cat([quantized(test_x[i:i + 1]) for i in range(len(test_x))])
    int8_acc = 100.0 * (int8_logits_all.argmax(1) == test_y).sum().item() / len(test_x)
    qep = torch.export.export(quantized, example)
    torch.export.save(qep, os.path.join(models_dir, "fashion_cnn_int8_pt2e.pt2"))
    print(f"fp32 test accuracy {fp32_acc:.2f}%, PT2E int8 {int8_acc:.2f}%")

    data_dir = os.path.join(ROOT, "test", "quant", "data")
    os.makedirs(data_dir, exist_ok=True)
    s = args.subset
    np.save(os.path.join(data_dir, "images.npy"), test_x[:s].numpy())
    np.save(os.path.join(data_dir, "labels.npy"), test_y[:s].numpy())
    np.save(os.path.join(data_dir, "calibration.npy"), train_x[:64].numpy())
    with torch.no_grad():
        np.save(os.path.join(data_dir, "fp32_logits.npy"), torch.cat([model(test_x[i:i + 1]) for i in range(s)]).numpy())
    np.save(os.path.join(data_dir, "int8_logits.npy"), int8_logits_all[:s].numpy())
    with open(os.path.join(data_dir, "accuracy.json"), "w") as f:
        json.dump({"torch": torch.__version__.split("+")[0], "test_images": len(test_x), "epochs": args.epochs,
                   "calibration_images": args.calibration, "fp32_accuracy": round(fp32_acc, 2),
                   "int8_pt2e_accuracy": round(int8_acc, 2), "classes": CLASSES}, f, indent=1)
        f.write("\n")
    images_dir = os.path.join(ROOT, "examples", "fashion", "images")
    os.makedirs(images_dir, exist_ok=True)
    raw_test = read_idx("t10k-images-idx3-ubyte.gz")
    for c, name in enumerate(CLASSES):
        i = int((test_y == c).nonzero()[0][0])
        write_gray_png(os.path.join(images_dir, f"{c:02d}_{slug(name)}.png"), raw_test[i])
    if args.full_test_dir:
        os.makedirs(args.full_test_dir, exist_ok=True)
        np.save(os.path.join(args.full_test_dir, "images.npy"), test_x.numpy())
        np.save(os.path.join(args.full_test_dir, "labels.npy"), test_y.numpy())
    print(f"wrote {models_dir}/fashion_cnn*.pt2 and {data_dir}")


if __name__ == "__main__":
    main()
