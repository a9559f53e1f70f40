"""Two Hugging Face encoder-decoders, a T5 and a Whisper, built from small transformers configs
with seeded random weights (no download) and exported as two archives each, for a two-method
program (`ember export --method encode=... --method decode=...`):

    OUT/t5/encode/model.pt2        input_ids int64 [1, 12]                          -> float32 [1, 12, 32]
    OUT/t5/decode/model.pt2        decoder_input_ids int64 [1, 6], enc [1, 12, 32]  -> logits float32 [1, 6, 128]
    OUT/whisper/encode/model.pt2   input_features float32 [1, 16, 40]               -> float32 [1, 20, 32]
    OUT/whisper/decode/model.pt2   decoder_input_ids int64 [1, 6], enc [1, 20, 32]  -> logits float32 [1, 6, 128]

encode returns the encoder's last_hidden_state; decode is the model's forward (decoder and LM
head, no KV cache: use_cache=False) over the given encoder states. Each archive holds only the
weights its method uses (encode the encoder; decode the model with its encoder removed), so the
tensors both archives store are the ones the two methods really share: T5's `shared` token
embedding (the encoder's and the decoder's embed_tokens, tied to lm_head); Whisper's encoder and
decoder have no parameter in common (its token embedding, tied to proj_out, is decode's alone).
Each directory also holds the seeded inputs (input_<i>.npy; decode's encoder states are encode's
eager output) and the eager output (output_0.npy). The script checks that every reloaded archive
reproduces the eager output and that T5's embedding is byte-identical in both archives, and
prints every tensor the two archives of a model store with the same bytes (`ember export` stores
such bytes once).

    python3 tools/models/export_hf_seq2seq.py OUT [--layers N] [--attn default|sdpa|eager]
        (torch and transformers; the device machine has them. The checked-in test/models/hf_seq2seq
        is the default: 1 layer per stack, each model's default attention (SDPA); 2 layers
        make the four archives about 2.3 MB instead of 1.5 MB)
"""
import argparse
import copy
import hashlib
import os

import numpy as np
import torch
import torch.nn as nn
import transformers
from transformers import T5Config, T5ForConditionalGeneration, WhisperConfig, WhisperForConditionalGeneration
from transformers.modeling_outputs import BaseModelOutput

VOCAB, D, HEADS, FF = 128, 32, 4, 64
SRC, TGT, MELS, FRAMES = 12, 6, 16, 20  # T5 source tokens, decoder tokens, Whisper mel bins and encoder frames


def t5(layers, attn):
    config = T5Config(vocab_size=VOCAB, d_model=D, d_kv=D // HEADS, d_ff=FF, num_layers=layers,
                      num_decoder_layers=layers, num_heads=HEADS, relative_attention_num_buckets=8,
                      dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    return build(T5ForConditionalGeneration, config, attn)


def whisper(layers, attn):
    # Whisper's token ids default to its 51865-token vocabulary; pad_token_id is the decoder
    # embedding's padding_idx, so all of them must be inside the small one.
    config = WhisperConfig(vocab_size=VOCAB, num_mel_bins=MELS, d_model=D, encoder_layers=layers,
                           decoder_layers=layers, encoder_attention_heads=HEADS,
                           decoder_attention_heads=HEADS, encoder_ffn_dim=FF, decoder_ffn_dim=FF,
                           max_source_positions=FRAMES, max_target_positions=16, dropout=0.0,
                           attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1,
                           bos_token_id=1, eos_token_id=2, decoder_start_token_id=3,
                           suppress_tokens=None, begin_suppress_tokens=None)
    return build(WhisperForConditionalGeneration, config, attn)


def build(cls, config, attn):
    m = cls._from_config(config) if attn == "default" else cls._from_config(config, attn_implementation=attn)
    print(f"  {cls.__name__}: attention {m.config._attn_implementation}, "
          f"{sum(p.numel() for p in m.parameters())} parameters")
    return m.eval()


def without_encoder(m):
    """A shallow copy of m (T5ForConditionalGeneration, or Whisper's outer model around
    WhisperModel) whose encoder is None: its forward with encoder_outputs never calls it, and
    torch.export lifts every parameter of the module it is given, used or not."""
    m = copy.copy(m)
    m._modules = dict(m._modules)
    if "encoder" in m._modules:
        m._modules["encoder"] = None
    else:
        m._modules["model"] = without_encoder(m._modules["model"])
    return m


class Encode(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.encoder = m.get_encoder()

    def forward(self, x):  # T5: input_ids; Whisper: input_features
        return self.encoder(x, return_dict=True).last_hidden_state


class Decode(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, decoder_input_ids, encoder_hidden_states):
        out = self.m(decoder_input_ids=decoder_input_ids,
                     encoder_outputs=BaseModelOutput(last_hidden_state=encoder_hidden_states),
                     use_cache=False, return_dict=True)
        return out.logits


def decode_module(m, inputs):
    """Decode over m without its encoder, checked against Decode over all of m."""
    full = Decode(m)
    try:
        part = Decode(without_encoder(m))
        with torch.no_grad():
            same = torch.equal(part(*inputs), full(*inputs))
    except Exception as e:  # noqa: BLE001: a transformers version whose forward touches the encoder
        same = f"{type(e).__name__}: {e}"
    if same is True:
        return part
    print(f"  decode without the encoder failed ({same}); exporting the whole model")
    return full


def export(module, inputs):
    try:
        return torch.export.export(module, inputs, strict=True), "strict"
    except Exception as e:  # noqa: BLE001: HF models often don't trace under dynamo
        print(f"  strict export failed ({type(e).__name__}: {str(e).splitlines()[0][:200]}); strict=False")
        return torch.export.export(module, inputs, strict=False), "non-strict"


def save(directory, module, inputs):
    os.makedirs(directory, exist_ok=True)
    with torch.no_grad():
        out = module(*inputs)
        ep, mode = export(module, inputs)
    path = os.path.join(directory, "model.pt2")
    torch.export.save(ep, path)
    for i, x in enumerate(inputs):
        np.save(os.path.join(directory, f"input_{i}.npy"), x.numpy())
    np.save(os.path.join(directory, "output_0.npy"), out.numpy())

    loaded = torch.export.load(path)
    with torch.no_grad():
        again = loaded.module()(*inputs)
    diff = (again - out).abs().max().item()
    print(f"  {directory}: {mode} export, {os.path.getsize(path)} bytes, {len(loaded.state_dict)} weights, "
          f"output {tuple(out.shape)}, reloaded max abs diff {diff:.3g}")
    assert torch.allclose(again, out, rtol=1e-5, atol=1e-5), directory
    return out, loaded


def digest(t):
    return hashlib.sha256(t.detach().contiguous().cpu().numpy().tobytes()).hexdigest()


def stored_tensors(ep):
    """digest of the bytes -> (byte count, whether all elements are equal, names) over the
    archive's parameters, buffers and tensor constants."""
    tensors = dict(ep.state_dict)
    tensors.update({k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)})
    out = {}
    for name, t in sorted(tensors.items()):
        t = t.detach()
        entry = out.setdefault(digest(t), (t.numel() * t.element_size(), bool((t == t.flatten()[0]).all()), []))
        entry[2].append(name)
    return out


def shared(name, enc, dec, expect=()):
    a, b = stored_tensors(enc), stored_tensors(dec)
    both = [d for d in a if d in b]
    real = [d for d in both if not a[d][1]]
    fills = [d for d in both if a[d][1]]
    names = lambda ns: ", ".join(ns[:3]) + (f" (+{len(ns) - 3})" if len(ns) > 3 else "")
    print(f"  {name}: encode stores {len(a)} distinct tensors, decode {len(b)}; "
          f"{len(both)} with identical bytes in both:")
    for d in real:
        print(f"    {a[d][0]} bytes: encode {names(a[d][2])} == decode {names(b[d][2])}")
    if not real:
        print("    no weight")
    if fills:
        print(f"    and {len(fills)} constant-filled ({sum(a[d][0] for d in fills)} bytes): "
              + "; ".join(f"{names(a[d][2])} == {names(b[d][2])}" for d in fills))
    for what, t in expect:  # the eager model's tensor: stored in both archives with the same bytes
        assert digest(t) in a and digest(t) in b, f"{name}: {what} is not in both archives"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=1, help="encoder and decoder layers of each model")
    p.add_argument("--attn", default="default", choices=["default", "sdpa", "eager"],
                   help="transformers attention implementation (default: the model's own choice)")
    a = p.parse_args()
    print("torch", torch.__version__, "transformers", transformers.__version__, "layers", a.layers, "attn", a.attn)

    torch.manual_seed(0)
    m = t5(a.layers, a.attn)
    ids = torch.randint(0, VOCAB, (1, SRC))
    dec_ids = torch.randint(0, VOCAB, (1, TGT))
    d = os.path.join(a.out, "t5")
    enc_out, enc = save(os.path.join(d, "encode"), Encode(m), (ids,))
    _, dec = save(os.path.join(d, "decode"), decode_module(m, (dec_ids, enc_out)), (dec_ids, enc_out))
    shared("t5", enc, dec, expect=[("shared.weight", m.shared.weight)])

    torch.manual_seed(1)
    m = whisper(a.layers, a.attn)
    features = torch.randn(1, MELS, 2 * FRAMES)
    dec_ids = torch.randint(0, VOCAB, (1, TGT))
    d = os.path.join(a.out, "whisper")
    enc_out, enc = save(os.path.join(d, "encode"), Encode(m), (features,))
    _, dec = save(os.path.join(d, "decode"), decode_module(m, (dec_ids, enc_out)), (dec_ids, enc_out))
    shared("whisper", enc, dec)

    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.out) for f in fs)
    print("wrote", a.out, total, "bytes")


if __name__ == "__main__":
    main()
