#!/usr/bin/env python3
"""The two public graphs that once failed `ember export --backend xnnpack` while their portable
export ran (issue 27), in small seeded configurations, saved like ../shared/models:

  hf_llama_static_cache  a Llama decoder through Hugging Face's own ExecuTorch integration
                         (transformers.integrations.executorch.convert_and_export_with_cache:
                         static KV cache as mutable buffers, inputs input_ids [1, 1] and
                         cache_position [1]); two calls on one program: input_*.npy ->
                         output_0.npy, then step_input_*.npy -> step_output_0.npy (right only
                         if the cache written by the first call is carried over).
  raft_small             torchvision's RAFT optical flow (raft_small, 2 flow updates, two
                         128x128 frames), output: the last flow estimate.

  OUT/<name>/model.pt2, input_<i>.npy, output_<i>.npy [, step_*], meta.json

Needs torch, torchvision and transformers (the device machine has them: tools/bench/ says how
to run a script there). Usage: export_partition_cases.py [-o OUT]   (default /tmp/ember_partition)
"""
import argparse
import json
import os

import numpy as np
import torch


def save(out, name, ep, inputs, outputs, extra=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    torch.export.save(ep, os.path.join(d, "model.pt2"))
    for i, a in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), a.detach().numpy())
    for i, r in enumerate(outputs):
        np.save(os.path.join(d, f"output_{i}.npy"), r.detach().float().numpy())
    meta = {"torch": torch.__version__, "inputs": [list(a.shape) for a in inputs],
            "ops": sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})}
    meta.update(extra or {})
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(name, "saved:", d, os.path.getsize(os.path.join(d, "model.pt2")), "bytes")
    return d


def export_with_static_cache(cfg, max_cache_len=32):
    """A LlamaForCausalLM of `cfg` (seeded by the caller) exported through Hugging Face's own
    ExecuTorch path: static cache of max_cache_len as buffers, example input id 17 at position 0.
    Returns (model, exported program, example ids, example positions)."""
    from transformers import GenerationConfig, LlamaForCausalLM
    from transformers.integrations.executorch import convert_and_export_with_cache

    model = LlamaForCausalLM(cfg).eval()
    model.generation_config = GenerationConfig(
        use_cache=True, cache_implementation="static", max_length=max_cache_len,
        cache_config={"batch_size": 1, "max_cache_len": max_cache_len})
    ids = torch.tensor([[17]], dtype=torch.long)
    pos = torch.tensor([0], dtype=torch.long)
    return model, convert_and_export_with_cache(model, example_input_ids=ids, example_cache_position=pos), ids, pos


def hf_llama(out, tiny=False):
    import transformers
    from transformers import LlamaConfig

    torch.manual_seed(0)
    if tiny:  # small enough to check in (test/models/hf_llama_static_cache)
        cfg = LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    else:
        cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model, ep, ids, pos = export_with_static_cache(cfg)
    # The reference: the exported program itself, two calls on one instance (its buffers are
    # the cache), so the second result depends on the first call's writes.
    m = ep.module()
    with torch.no_grad():
        first = m(input_ids=ids, cache_position=pos)
        step_ids, step_pos = torch.tensor([[42]], dtype=torch.long), torch.tensor([1], dtype=torch.long)
        second = m(input_ids=step_ids, cache_position=step_pos)
    first = first if isinstance(first, torch.Tensor) else first[0]
    second = second if isinstance(second, torch.Tensor) else second[0]
    # PyTorch's greedy continuation of a prompt, token by token through a fresh instance of
    # the exported program (what `ember generate` does): the reference for the generate test.
    prompt, new_tokens = [5, 17, 42, 3], 8
    g = ep.module()
    with torch.no_grad():
        tokens = list(prompt)
        for p in range(len(prompt) + new_tokens - 1):
            logits = g(input_ids=torch.tensor([[tokens[p]]]), cache_position=torch.tensor([p]))
            logits = logits if isinstance(logits, torch.Tensor) else logits[0]
            if p >= len(prompt) - 1:
                tokens.append(int(logits[0, -1].argmax()))
    # The same from transformers' own generate() on the eager model with its static cache.
    with torch.no_grad():
        hf = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                            cache_implementation="static")
    name = "hf_llama_static_cache_tiny" if tiny else "hf_llama_static_cache"
    d = save(out, name, ep, [ids, pos], [first],
             {"transformers": transformers.__version__, "max_cache_len": 32, "prompt": prompt,
              "greedy": tokens[len(prompt):], "hf_generate": hf[0, len(prompt):].tolist()})
    np.save(os.path.join(d, "step_input_0.npy"), step_ids.numpy())
    np.save(os.path.join(d, "step_input_1.npy"), step_pos.numpy())
    np.save(os.path.join(d, "step_output_0.npy"), second.detach().float().numpy())


def hf_llama_tokenizer(out):
    """hf_llama_tokenizer: a Llama decoder with its own tokenizer.json, the recipe a Hugging Face
    user follows: a PreTrainedTokenizerFast over a byte-level BPE tokenizer.json (the one
    examples/llm ships, 2,048 ids), a LlamaForCausalLM of that vocabulary, generation config with
    a static cache, convert_and_export_with_cache. meta.json has the prompt's text, its ids as
    the Hugging Face tokenizer encodes them, and model.generate()'s greedy ids and their text."""
    import shutil

    import transformers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    here = os.path.dirname(os.path.abspath(__file__))
    tok_path = os.path.join(here, "..", "..", "examples", "llm", "tokenizer.json")
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=tok_path)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model, ep, ids, pos = export_with_static_cache(cfg)
    prompt_text = "The best way to predict the future is"
    prompt = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    new_tokens = 10
    with torch.no_grad():
        hf = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                            cache_implementation="static", pad_token_id=0)
    greedy = hf[0, len(prompt):].tolist()
    d = os.path.join(out, "hf_llama_tokenizer")
    os.makedirs(d, exist_ok=True)
    torch.export.save(ep, os.path.join(d, "model.pt2"))
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "max_cache_len": 32,
                   "tokenizer": "examples/llm/tokenizer.json", "prompt_text": prompt_text, "prompt": prompt,
                   "hf_generate": greedy, "hf_generate_text": tokenizer.decode(greedy)}, f, indent=1)
    print("hf_llama_tokenizer saved:", d, greedy, repr(tokenizer.decode(greedy)))


class LastFlow(torch.nn.Module):
    def __init__(self, m, updates):
        super().__init__()
        self.m, self.updates = m, updates

    def forward(self, a, b):
        return self.m(a, b, num_flow_updates=self.updates)[-1]


def raft(out):
    import torchvision
    from torchvision.models.optical_flow import raft_small

    torch.manual_seed(0)
    m = LastFlow(raft_small(weights=None).eval(), 2).eval()
    g = torch.Generator().manual_seed(1)
    a = torch.rand(1, 3, 128, 128, generator=g) * 2 - 1
    b = torch.rand(1, 3, 128, 128, generator=g) * 2 - 1
    with torch.no_grad():
        ep = torch.export.export(m, (a, b))
        ref = m(a, b)
    save(out, "raft_small", ep, [a, b], [ref], {"torchvision": torchvision.__version__, "flow_updates": 2})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", default="/tmp/ember_partition")
    ap.add_argument("only", nargs="*", help="hf_llama, hf_llama_tiny, hf_llama_tokenizer and/or raft (default: hf_llama raft)")
    args = ap.parse_args()
    names = {"hf_llama": hf_llama, "raft": raft, "hf_llama_tiny": lambda o: hf_llama(o, tiny=True),
             "hf_llama_tokenizer": hf_llama_tokenizer}
    for fn in [names[n] for n in (args.only or ["hf_llama", "raft"])]:
        try:
            fn(args.out)
        except Exception as e:  # report and go on with the other model
            import traceback
            traceback.print_exc()
            print(getattr(fn, "__name__", "model"), "FAILED:", e)


if __name__ == "__main__":
    main()
