#!/usr/bin/env python3
"""External-model suite: public architectures from transformers, torchvision and timm (and a
few plain torch.nn ones) in small configurations with seeded random weights, built from their
config classes (nothing is downloaded), exported with torch.export (training IR) and saved
the way ../shared/models holds models:

  OUT/<name>/model.pt2      torch.export.save of torch.export.export(model, inputs)
  OUT/<name>/input_<i>.npy  seeded inputs
  OUT/<name>/output_<i>.npy eager PyTorch float32 results on those inputs
  OUT/<name>/meta.json      arch, source library, parameter count, aten ops in the graph,
                            input shapes/dtypes, torch version, input_sensitivity

Usage: export_external.py [-o OUT] [--list] [NAME...]   (default OUT: /tmp/ember_external;
no NAME: every model). A model whose export fails in PyTorch is reported and skipped.
Regenerating docs/model-coverage.md: see tools/models/run_external.py.
"""
import argparse
import json
import os
import sys
import traceback

import numpy as np
import torch
import torch.nn as nn

MODELS = {}  # name -> (source, arch, builder)


def model(name, source, arch):
    def register(fn):
        MODELS[name] = (source, arch, fn)
        return fn
    return register


class Outputs(nn.Module):
    """Calls a Hugging Face model with named tensor arguments and returns a tuple of tensors
    (the fields named in `keys`), so the exported graph has plain tensor outputs."""

    def __init__(self, m, arg_names, keys, **fixed):
        super().__init__()
        self.m, self.arg_names, self.keys, self.fixed = m, arg_names, keys, fixed

    def forward(self, *args):
        out = self.m(**dict(zip(self.arg_names, args)), **self.fixed)
        return tuple(out[k] for k in self.keys)


def randomize_norms(m, x):
    """Untrained CNNs collapse (BatchNorm with unit statistics after small-variance init makes
    the output barely depend on the input). Random affine parameters and running statistics
    measured on random batches like `x` keep the reference check sensitive to the input path."""
    g = torch.Generator().manual_seed(1)
    bns = [mod for mod in m.modules() if isinstance(mod, nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        with torch.no_grad():
            if bn.affine:
                bn.weight.copy_(0.5 + torch.rand(bn.num_features, generator=g))
                bn.bias.copy_(0.2 * torch.randn(bn.num_features, generator=g))
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the calibration batches
    m.train()
    with torch.no_grad():
        for k in range(2):
            m(torch.randn((4,) + tuple(x.shape[1:]), generator=torch.Generator().manual_seed(100 + k)))
    return m.eval()


def ids(n, vocab=256, batch=1, seed=0):
    return torch.randint(3, vocab, (batch, n), generator=torch.Generator().manual_seed(seed))


def image(h=64, w=None, c=3, seed=0):
    return torch.randn(1, c, h, w or h, generator=torch.Generator().manual_seed(seed))


def hf(cls_name, cfg_name, **cfg):
    import transformers
    config = getattr(transformers, cfg_name)(**cfg)
    return getattr(transformers, cls_name)(config)


# ---------------------------------------------------------------- transformers: text encoders
SMALL_BERT = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=64)


def encoder(cls, cfg_name, seq=16, **cfg):
    m = hf(cls, cfg_name, **{**SMALL_BERT, **cfg})
    x = ids(seq)
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, -3:] = 0  # some padding, so the mask path matters
    return Outputs(m, ["input_ids", "attention_mask"], ["last_hidden_state"]), (x, mask)


@model("bert", "transformers", "BertModel (encoder)")
def _():
    return encoder("BertModel", "BertConfig")


@model("roberta", "transformers", "RobertaModel (encoder)")
def _():
    return encoder("RobertaModel", "RobertaConfig", max_position_embeddings=66, pad_token_id=1)


@model("deberta_v2", "transformers", "DebertaV2Model (encoder, disentangled attention)")
def _():
    return encoder("DebertaV2Model", "DebertaV2Config", relative_attention=True, position_buckets=16,
                   max_relative_positions=32, pos_att_type=["p2c", "c2p"])


@model("albert", "transformers", "AlbertModel (encoder, shared layers)")
def _():
    return encoder("AlbertModel", "AlbertConfig", embedding_size=32)


@model("electra", "transformers", "ElectraModel (encoder)")
def _():
    return encoder("ElectraModel", "ElectraConfig", embedding_size=32)


@model("distilbert", "transformers", "DistilBertModel (encoder)")
def _():
    m = hf("DistilBertModel", "DistilBertConfig", vocab_size=256, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
           max_position_embeddings=64)
    x = ids(16)
    mask = torch.ones(1, 16, dtype=torch.int64)
    mask[0, -3:] = 0
    return Outputs(m, ["input_ids", "attention_mask"], ["last_hidden_state"]), (x, mask)


# ---------------------------------------------------------------- transformers: decoders
SMALL_DECODER = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=False)


def decoder(cls, cfg_name, seq=16, **cfg):
    m = hf(cls, cfg_name, **{**SMALL_DECODER, **cfg})
    return Outputs(m, ["input_ids"], ["logits"], use_cache=False), (ids(seq),)


@model("llama", "transformers", "LlamaForCausalLM (decoder, GQA, RoPE, SwiGLU)")
def _():
    return decoder("LlamaForCausalLM", "LlamaConfig")


@model("qwen2", "transformers", "Qwen2ForCausalLM (decoder, GQA, qkv bias)")
def _():
    return decoder("Qwen2ForCausalLM", "Qwen2Config")


@model("mistral", "transformers", "MistralForCausalLM (decoder, sliding window)")
def _():
    return decoder("MistralForCausalLM", "MistralConfig", sliding_window=8, head_dim=16)


@model("phi", "transformers", "PhiForCausalLM (decoder, partial rotary, parallel block)")
def _():
    return decoder("PhiForCausalLM", "PhiConfig", partial_rotary_factor=0.5)


@model("gemma", "transformers", "GemmaForCausalLM (decoder, GeGLU, scaled embeddings)")
def _():
    return decoder("GemmaForCausalLM", "GemmaConfig", head_dim=16)


@model("gpt_neox", "transformers", "GPTNeoXForCausalLM (decoder, parallel residual)")
def _():
    return decoder("GPTNeoXForCausalLM", "GPTNeoXConfig", rotary_pct=0.25)


# ---------------------------------------------------------------- transformers: encoder-decoders
def seq2seq(cls, cfg_name, keys, src=16, tgt=8, **cfg):
    m = hf(cls, cfg_name, **cfg)
    x, d = ids(src), ids(tgt, seed=1)
    mask = torch.ones(1, src, dtype=torch.int64)
    mask[0, -2:] = 0
    return Outputs(m, ["input_ids", "attention_mask", "decoder_input_ids"], keys, use_cache=False), (x, mask, d)


T5_CFG = dict(vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
              relative_attention_num_buckets=16, relative_attention_max_distance=32)


@model("t5_encoder", "transformers", "T5EncoderModel (encoder, relative position bias)")
def _():
    m = hf("T5EncoderModel", "T5Config", **T5_CFG)
    return Outputs(m, ["input_ids"], ["last_hidden_state"]), (ids(24),)


@model("t5", "transformers", "T5ForConditionalGeneration (encoder-decoder, decoder ids)")
def _():
    return seq2seq("T5ForConditionalGeneration", "T5Config", ["logits"], **T5_CFG, num_decoder_layers=2)


BART_CFG = dict(vocab_size=256, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64)


@model("bart", "transformers", "BartForConditionalGeneration (encoder-decoder)")
def _():
    return seq2seq("BartForConditionalGeneration", "BartConfig", ["logits"], **BART_CFG)


@model("marian", "transformers", "MarianMTModel (encoder-decoder, sinusoidal positions)")
def _():
    return seq2seq("MarianMTModel", "MarianConfig", ["logits"], **BART_CFG, decoder_vocab_size=256, pad_token_id=0,
                   decoder_start_token_id=0)


WHISPER_CFG = dict(vocab_size=256, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
                   encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                   max_source_positions=32, max_target_positions=32, pad_token_id=0, bos_token_id=1,
                   eos_token_id=2, decoder_start_token_id=1, suppress_tokens=None, begin_suppress_tokens=None)


def mel(frames=64, bins=16):
    return torch.randn(1, bins, frames, generator=torch.Generator().manual_seed(0))


@model("whisper_encoder", "transformers", "WhisperEncoder (audio encoder, conv stem)")
def _():
    import transformers
    m = transformers.WhisperModel(transformers.WhisperConfig(**WHISPER_CFG)).get_encoder()
    return Outputs(m, ["input_features"], ["last_hidden_state"]), (mel(),)


@model("whisper", "transformers", "WhisperForConditionalGeneration (audio encoder-decoder)")
def _():
    m = hf("WhisperForConditionalGeneration", "WhisperConfig", **WHISPER_CFG)
    return Outputs(m, ["input_features", "decoder_input_ids"], ["logits"], use_cache=False), (mel(), ids(8, seed=1))


# ---------------------------------------------------------------- audio
W2V_CFG = dict(vocab_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
               conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
               num_conv_pos_embedding_groups=4, do_stable_layer_norm=False, feat_extract_norm="group")


def waveform(n=1600):
    return torch.randn(1, n, generator=torch.Generator().manual_seed(0))


@model("wav2vec2", "transformers", "Wav2Vec2Model (audio encoder, weight-norm conv positions)")
def _():
    m = hf("Wav2Vec2Model", "Wav2Vec2Config", **W2V_CFG)
    return Outputs(m, ["input_values"], ["last_hidden_state"]), (waveform(),)


@model("hubert", "transformers", "HubertModel (audio encoder, weight-norm conv positions)")
def _():
    m = hf("HubertModel", "HubertConfig", **W2V_CFG)
    return Outputs(m, ["input_values"], ["last_hidden_state"]), (waveform(),)


# ---------------------------------------------------------------- vision
@model("convnext", "timm", "ConvNeXt (depthwise 7x7, LayerNorm2d, GELU MLP)")
def _():
    import timm
    m = timm.create_model("convnext_atto", pretrained=False, depths=(1, 1, 2, 1), dims=(16, 32, 64, 128),
                          num_classes=10)
    return m, (image(),)


@model("swin", "transformers", "SwinModel (shifted-window attention)")
def _():
    m = hf("SwinModel", "SwinConfig", image_size=64, patch_size=4, embed_dim=16, depths=[1, 2], num_heads=[2, 4],
           window_size=4)
    return Outputs(m, ["pixel_values"], ["last_hidden_state", "pooler_output"]), (image(),)


@model("deit", "timm", "DeiT (distilled ViT, class + distillation tokens)")
def _():
    import timm
    m = timm.create_model("deit_tiny_distilled_patch16_224", pretrained=False, img_size=64, patch_size=8,
                          embed_dim=64, depth=2, num_heads=4, num_classes=10)
    return m, (image(),)


@model("mobilevit", "transformers", "MobileViTModel (conv + transformer blocks, unfold/fold)")
def _():
    m = hf("MobileViTModel", "MobileViTConfig", image_size=64, hidden_sizes=[32, 48, 64],
           neck_hidden_sizes=[8, 16, 24, 32, 40, 48, 96], num_attention_heads=2, mlp_ratio=2.0)
    return Outputs(randomize_norms(m, image()), ["pixel_values"], ["last_hidden_state", "pooler_output"]), (image(),)


@model("efficientnet_v2", "timm", "EfficientNetV2 (fused MBConv, SE)")
def _():
    import timm
    m = timm.create_model("tf_efficientnetv2_b0", pretrained=False, channel_multiplier=0.25, depth_multiplier=0.5,
                          num_classes=10)
    return randomize_norms(m, image()), (image(),)


@model("regnet", "torchvision", "RegNet (group conv, SE-free X block)")
def _():
    from torchvision.models.regnet import BlockParams, RegNet
    m = RegNet(BlockParams.from_init_params(depth=6, w_0=16, w_a=8.0, w_m=2.0, group_width=8), num_classes=10,
               stem_width=16)
    return randomize_norms(m, image()), (image(),)


@model("densenet", "torchvision", "DenseNet (dense concat blocks)")
def _():
    from torchvision.models import DenseNet
    m = DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, bn_size=2, num_classes=10)
    return randomize_norms(m, image()), (image(),)


@model("googlenet", "torchvision", "GoogLeNet / Inception v1 (inception blocks)")
def _():
    import torchvision
    m = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True, num_classes=10)
    return randomize_norms(m, image()), (image(),)


def small_mobilenet_v3():
    import torchvision
    return torchvision.models.mobilenet_v3_small(weights=None, width_mult=0.5, dilated=True).features


@model("lraspp", "torchvision", "LR-ASPP segmentation head on MobileNetV3-Small (x0.5, dilated)")
def _():
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.lraspp import LRASPP
    f = small_mobilenet_v3()
    stages = [0] + [i for i, b in enumerate(f) if getattr(b, "_is_cn", False)] + [len(f) - 1]
    low, high = stages[-4], stages[-1]
    backbone = IntermediateLayerGetter(f, return_layers={str(low): "low", str(high): "high"})
    m = LRASPP(backbone, f[low].out_channels, f[high].out_channels, num_classes=4, inter_channels=32)
    return _DictOut(randomize_norms(m, image())), (image(),)


@model("deeplabv3", "torchvision", "DeepLabV3 (ASPP, atrous rates 2/4/6) on MobileNetV3-Small (x0.5, dilated)")
def _():
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3
    f = small_mobilenet_v3()
    backbone = IntermediateLayerGetter(f, return_layers={str(len(f) - 1): "out"})
    head = nn.Sequential(ASPP(f[-1].out_channels, [2, 4, 6], out_channels=32), nn.Conv2d(32, 32, 3, padding=1, bias=False),
                         nn.BatchNorm2d(32), nn.ReLU(), nn.Conv2d(32, 4, 1))
    return _DictOut(randomize_norms(DeepLabV3(backbone, head), image())), (image(),)


@model("segformer", "transformers", "SegformerForSemanticSegmentation (efficient attention, MLP decoder)")
def _():
    m = hf("SegformerForSemanticSegmentation", "SegformerConfig", num_channels=3, num_encoder_blocks=2, depths=[1, 1],
           sr_ratios=[4, 2], hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
           mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=4)
    return Outputs(m, ["pixel_values"], ["logits"]), (image(),)


class _DictOut(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


# ---------------------------------------------------------------- recurrent
class Rnn(nn.Module):
    def __init__(self, rnn, head):
        super().__init__()
        self.rnn, self.head = rnn, head

    def forward(self, x):
        y = self.rnn(x)[0]
        return self.head(y)


def seq_features(t=12, f=10, batch_first=True):
    x = torch.randn(1, t, f, generator=torch.Generator().manual_seed(0))
    return x if batch_first else x.transpose(0, 1).contiguous()


@model("gru_bidir", "torch.nn", "2-layer bidirectional GRU (batch_first)")
def _():
    return Rnn(nn.GRU(10, 16, num_layers=2, bidirectional=True, batch_first=True), nn.Linear(32, 4)), (seq_features(),)


@model("lstm_bidir", "torch.nn", "2-layer bidirectional LSTM (batch_first)")
def _():
    return Rnn(nn.LSTM(10, 16, num_layers=2, bidirectional=True, batch_first=True), nn.Linear(32, 4)), (seq_features(),)


@model("lstm_proj", "torch.nn", "LSTM with projection (proj_size), sequence-first")
def _():
    return Rnn(nn.LSTM(10, 16, num_layers=1, proj_size=8), nn.Linear(8, 4)), (seq_features(batch_first=False),)


@model("rnn_tanh", "torch.nn", "2-layer Elman RNN (tanh)")
def _():
    return Rnn(nn.RNN(10, 16, num_layers=2, batch_first=True), nn.Linear(16, 4)), (seq_features(),)


# ---------------------------------------------------------------- diffusion-style U-Net
class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(4, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(temb, cout)
        self.n2, self.c2 = nn.GroupNorm(4, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.c1(nn.functional.silu(self.n1(x)))
        h = h + self.t(t)[:, :, None, None]
        h = self.c2(nn.functional.silu(self.n2(h)))
        return h + self.skip(x)


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.attn = nn.GroupNorm(4, c), nn.MultiheadAttention(c, 2, batch_first=True)

    def forward(self, x):
        b, c, h, w = x.shape
        s = self.norm(x).flatten(2).transpose(1, 2)
        return x + self.attn(s, s, s, need_weights=False)[0].transpose(1, 2).reshape(b, c, h, w)


class UNet(nn.Module):
    """DDPM-style: sinusoidal timestep embedding, GroupNorm/SiLU residual blocks, self-attention
    at the bottleneck, strided-conv down- and ConvTranspose up-sampling, skip concatenation."""

    def __init__(self, c=8, temb=32):
        super().__init__()
        self.temb = temb
        self.tmlp = nn.Sequential(nn.Linear(temb, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Conv2d(3, c, 3, padding=1)
        self.d1, self.down1 = ResBlock(c, c, temb), nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.d2, self.down2 = ResBlock(c, 2 * c, temb), nn.Conv2d(2 * c, 2 * c, 3, stride=2, padding=1)
        self.mid, self.attn = ResBlock(2 * c, 2 * c, temb), AttnBlock(2 * c)
        self.up2, self.u2 = nn.ConvTranspose2d(2 * c, 2 * c, 4, stride=2, padding=1), ResBlock(4 * c, c, temb)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.u1 = ResBlock(2 * c, c, temb)
        self.out = nn.Sequential(nn.GroupNorm(4, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

    def forward(self, x, t):
        half = self.temb // 2
        freqs = torch.exp(-torch.log(torch.tensor(10000.0)) * torch.arange(half, dtype=torch.float32) / half)
        e = t[:, None].float() * freqs[None]
        e = self.tmlp(torch.cat([e.sin(), e.cos()], dim=1))
        h0 = self.inp(x)
        h1 = self.d1(h0, e)
        h2 = self.d2(self.down1(h1), e)
        m = self.attn(self.mid(self.down2(h2), e))
        u = self.u2(torch.cat([self.up2(m), h2], dim=1), e)
        u = self.u1(torch.cat([self.up1(u), h1], dim=1), e)
        return self.out(u)


@model("unet", "torch.nn", "diffusion-style U-Net (GroupNorm, timestep embedding, attention, ConvTranspose)")
def _():
    return UNet(), (image(32), torch.tensor([17], dtype=torch.int64))


# ---------------------------------------------------------------- driver
def to_list(y):
    if isinstance(y, torch.Tensor):
        return [y]
    out = []
    for v in y:
        out.extend(to_list(v))
    return out


def op_list(ep):
    ops = {}
    for n in ep.graph.nodes:
        if n.op == "call_function":
            name = str(n.target)
            ops[name] = ops.get(name, 0) + 1
    return dict(sorted(ops.items()))


def export_one(out_root, name):
    source, arch, build = MODELS[name]
    torch.manual_seed(0)
    m, inputs = build()
    m = m.eval()
    with torch.no_grad():
        ref = to_list(m(*inputs))
        # How much the output moves between two random inputs (a collapsed model is useless as a check).
        g = torch.Generator().manual_seed(7)
        other = tuple(torch.randn(a.shape, generator=g) if a.is_floating_point() else
                      torch.randint(3, int(a.max()) + 1, a.shape, generator=g) if a.max() > 1 else a for a in inputs)
        alt = to_list(m(*other))
        sens = max(float((a - b).norm() / max(b.norm(), 1e-12)) for a, b in zip(alt, ref) if b.is_floating_point())
    ep = torch.export.export(m, inputs)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    torch.export.save(ep, os.path.join(out, "model.pt2"))
    for i, a in enumerate(inputs):
        np.save(os.path.join(out, f"input_{i}.npy"), a.numpy())
    for i, r in enumerate(ref):
        np.save(os.path.join(out, f"output_{i}.npy"), r.detach().numpy())
    meta = {
        "name": name, "arch": arch, "source": source, "torch": torch.__version__,
        "params": sum(p.numel() for p in m.parameters()),
        "inputs": [{"shape": list(a.shape), "dtype": str(a.dtype).replace("torch.", "")} for a in inputs],
        "outputs": [{"shape": list(r.shape), "dtype": str(r.dtype).replace("torch.", "")} for r in ref],
        "input_sensitivity": sens, "aten_ops": op_list(ep),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    size = os.path.getsize(os.path.join(out, "model.pt2"))
    print(f"{name}: {meta['params']} params, {size // 1024} KB, {sum(meta['aten_ops'].values())} ops, "
          f"input sensitivity {sens:.3g} -> {out}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--out", default="/tmp/ember_external")
    p.add_argument("--list", action="store_true")
    p.add_argument("names", nargs="*")
    a = p.parse_args()
    if a.list:
        for n, (src, arch, _) in MODELS.items():
            print(f"{n:18s} {src:13s} {arch}")
        return 0
    failed = []
    for n in a.names or list(MODELS):
        if n not in MODELS:
            sys.exit(f"unknown model {n}; --list shows them")
        try:
            export_one(a.out, n)
        except Exception as e:  # keep going: one architecture that PyTorch cannot export is not fatal
            traceback.print_exc()
            failed.append(n)
            print(f"{n}: torch export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
    if failed:
        print("failed in PyTorch:", " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
