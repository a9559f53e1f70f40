#!/usr/bin/env python3
"""Mixture-of-experts decoders from Hugging Face transformers, exported as a user would:
tiny configs (no hub download), seeded weights, torch.export of the logits for a fixed
prompt, for //test/models:moe_test.

For each model writes OUT/<name>/model.pt2, input_0.npy (token ids [1, 7]), output_0.npy
(eager logits) and meta.json (versions, experts each layer's router picked for the prompt).
The input is checked to route its tokens to several experts in every layer, so a kernel
that ignored the routing would not match.

transformers 5.x exports the experts as `transformers::grouped_mm_fallback` (a torch.library
operator; Ember has a kernel for it) and the rotary embedding inside
`wrap_with_set_grad_enabled` (a no_grad block; Ember's importer inlines it).

Usage: export_moe.py OUT [mixtral olmoe qwen2_moe]
"""
import json
import os
import sys

import numpy as np
import torch
import transformers

CASES = {
    "mixtral": ("MixtralConfig", "MixtralForCausalLM",
                dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=48)),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM",
              dict(num_experts=4, num_experts_per_tok=2, intermediate_size=24)),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                  dict(num_experts=4, num_experts_per_tok=2, intermediate_size=48, moe_intermediate_size=24,
                       shared_expert_intermediate_size=48)),
}
COMMON = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=64)


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def export(out_root, name):
    cfg_cls, model_cls, extra = CASES[name]
    torch.manual_seed(0)
    config = getattr(transformers, cfg_cls)(**COMMON, **extra)
    config.use_cache = False
    model = getattr(transformers, model_cls)(config).eval()
    ids = torch.tensor([[5, 17, 99, 3, 64, 120, 41]])
    picked = []
    hooks = []
    for layer in model.model.layers:
        gate = getattr(layer.mlp, "gate", None) or getattr(layer.mlp, "router", None)
        if gate is not None:
            hooks.append(gate.register_forward_hook(
                lambda m, i, o: picked.append(sorted(set(
                    (o[1] if isinstance(o, tuple) and o[1].dtype in (torch.int64, torch.int32)
                     else (o[0] if isinstance(o, tuple) else o).topk(2, dim=-1).indices).flatten().tolist())))))
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    for h in hooks:
        h.remove()
    assert picked and all(len(p) >= 3 for p in picked), f"{name}: the prompt routes to too few experts: {picked}"
    ep = torch.export.export(Logits(model), (ids,))
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    torch.export.save(ep, os.path.join(out, "model.pt2"))
    np.save(os.path.join(out, "input_0.npy"), ids.numpy())
    np.save(os.path.join(out, "output_0.npy"), ref.numpy())
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "architecture": model_cls,
                   "experts_picked_per_layer": picked}, f, indent=1)
    print(name, "experts picked per layer:", picked)


def main():
    out = sys.argv[1]
    for name in sys.argv[2:] or list(CASES):
        export(out, name)


if __name__ == "__main__":
    main()
