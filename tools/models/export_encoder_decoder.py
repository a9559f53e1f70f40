"""A small encoder-decoder in the T5 / Whisper shape (a transformer encoder; a decoder that
attends causally to its own tokens and across to the encoder's output; one embedding shared by
both) exported as two archives for a two-method program:

    OUT/encode/model.pt2   tokens int64 [1, 12]                    -> memory float32 [1, 12, 32]
    OUT/decode/model.pt2   tokens int64 [1, 8], memory [1, 12, 32] -> logits float32 [1, 8, 64]

with seeded weights, inputs (input_<i>.npy) and eager outputs (output_<i>.npy); decode's memory
input is encode's eager output. The embedding is the same tensor in both archives, so
`ember export --method encode=... --method decode=...` stores it once.

    python3 tools/models/export_encoder_decoder.py OUT      (torch; the device machine has it)
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

VOCAB, D, HEADS, FF, LAYERS = 64, 32, 4, 64, 2


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        enc = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
        dec = nn.TransformerDecoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, LAYERS, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec, LAYERS)
        self.head = nn.Linear(D, VOCAB)


class Encode(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, tokens):
        return self.m.encoder(self.m.embed(tokens))


class Decode(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, tokens, memory):
        n = tokens.shape[1]
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        return self.m.head(self.m.decoder(self.m.embed(tokens), memory, tgt_mask=causal, tgt_is_causal=True))


def save(directory, module, inputs):
    os.makedirs(directory, exist_ok=True)
    ep = torch.export.export(module, inputs)
    torch.export.save(ep, os.path.join(directory, "model.pt2"))
    with torch.no_grad():
        out = module(*inputs)
    for i, x in enumerate(inputs):
        np.save(os.path.join(directory, f"input_{i}.npy"), x.numpy())
    np.save(os.path.join(directory, "output_0.npy"), out.numpy())
    return out


def main(out):
    torch.manual_seed(0)
    m = Seq2Seq().eval()
    src = torch.randint(0, VOCAB, (1, 12))
    tgt = torch.randint(0, VOCAB, (1, 8))
    with torch.no_grad():
        memory = save(os.path.join(out, "encode"), Encode(m), (src,))
        save(os.path.join(out, "decode"), Decode(m), (tgt, memory))
    print("wrote", out, "torch", torch.__version__)


if __name__ == "__main__":
    main(sys.argv[1])
