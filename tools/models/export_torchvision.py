#!/usr/bin/env python3
"""Exports torchvision image models the way ../shared/models holds them, for machines where
those archives are too large to carry (the device machine has PyTorch and torchvision):
seeded random weights, eval mode, torch.export (training IR), torch.export.save.

For each NAME writes OUT/NAME/model.pt2, input_0.npy (1x3x224x224, seeded) and output_0.npy
(eager PyTorch on that input), and model.onnx (TorchScript ONNX export of the same
module, for onnxruntime), so `ember export` + `ember run` can be checked against it.
Usage: export_torchvision.py OUT NAME...   (NAME: a torchvision.models builder, e.g. resnet18, or
vit_tiny: the shared models' 4-layer VisionTransformer, 192 wide, 3 heads, MLP 768, patch 16)"""
import os
import sys

import numpy as np
import torch
import torchvision


def export(out_root, name):
    torch.manual_seed(0)
    if name == "vit_tiny":  # ../shared/models/vit_tiny's architecture (2,158,504 parameters)
        from torchvision.models.vision_transformer import VisionTransformer
        model = VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192,
                                  mlp_dim=768).eval()
    else:
        model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        ref = model(x)
    ep = torch.export.export(model, (x,))
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    torch.export.save(ep, os.path.join(out, "model.pt2"))
    np.save(os.path.join(out, "input_0.npy"), x.numpy())
    np.save(os.path.join(out, "output_0.npy"), ref.numpy())
    try:  # for onnxruntime comparisons (torch_compare.py prefers this file when present)
        torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), dynamo=False)
    except Exception as e:
        print(f"{name}: no ONNX ({type(e).__name__}: {str(e).splitlines()[0][:160]})")
    print(f"{name}: exported to {out}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for n in sys.argv[2:]:
        export(sys.argv[1], n)
