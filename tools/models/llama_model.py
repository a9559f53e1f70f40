"""A small Llama-style decoder in plain PyTorch, written for `torch.export` and Ember.

Architecture (per block): RMSNorm -> attention (RoPE, grouped-query: n_kv_heads < n_heads, K/V
expanded with repeat_interleave, F.scaled_dot_product_attention) -> residual; RMSNorm ->
SiLU-gated MLP (w2(silu(w1 x) * w3 x)) -> residual. Final RMSNorm, output head tied to the token
embedding (one parameter, `tok.weight`, used by both `embedding` and the last `linear`).

Two forwards share the weights:

  forward(tokens [1, T] int64, input_pos [T] int64) -> logits [1, T, vocab] float32
      The exported one. Each layer keeps its KV cache in registered buffers
      `layers.<i>.k_cache` / `layers.<i>.v_cache` of shape [1, n_kv_heads, max_seq, head_dim],
      written in place with `index_copy_(2, input_pos, ...)`. Query t attends to cache
      positions j <= input_pos[t]: the mask is row input_pos[t] of the constant boolean
      lower-triangular buffer `causal` [max_seq, max_seq] (causal[i, j] = arange(max_seq)[j] <= i),
      so stale cache entries past the current position never count. RoPE cos/sin are constant
      buffers [max_seq, head_dim] indexed by input_pos. A runtime calls it once with the prompt
      (input_pos = arange(P)) and then once per new token (T = 1, input_pos = [P + i]).
      The cache carries state between calls: `reset_cache()` before a new sequence.

  forward_train(tokens [B, T]) -> logits [B, T, vocab]
      No cache, full causal attention (is_causal=True), optional dropout; used for training.
      With dropout off it equals forward(tokens, arange(T)) on a fresh cache.

The module follows the conventions of ../shared/models/tiny_llama_kv (same names, same op set
after export: embedding, index.Tensor, pow, mean, add, rsqrt, mul, linear, view, transpose,
slice, neg, cat, index_copy_, repeat_interleave, scaled_dot_product_attention, reshape, silu).
"""
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 2048
    dim: int = 192
    n_layers: int = 4
    n_heads: int = 6
    n_kv_heads: int = 2
    hidden_dim: int = 512
    max_seq_len: int = 256
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    dropout: float = 0.0  # forward_train only

    @property
    def head_dim(self):
        return self.dim // self.n_heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    """x [B, H, T, hd]; cos/sin [T, hd] (broadcast over batch and heads)."""
    return x * cos + rotate_half(x) * sin


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.n_kv_heads = cfg.n_kv_heads
        self.head_dim = cfg.head_dim
        self.n_rep = cfg.n_heads // cfg.n_kv_heads
        self.dropout = cfg.dropout
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * cfg.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.dim, bias=False)
        self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        cache_shape = (1, cfg.n_kv_heads, cfg.max_seq_len, cfg.head_dim)
        self.register_buffer("k_cache", torch.zeros(cache_shape), persistent=True)
        self.register_buffer("v_cache", torch.zeros(cache_shape), persistent=True)

    def _qkv(self, x, cos, sin):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def _mlp(self, x):
        h = self.ffn_norm(x)
        return self.w2(F.silu(self.w1(h)) * self.w3(h))

    def forward(self, x, cos, sin, input_pos, mask):
        """Cache path: x [1, T, dim], mask [T, max_seq] bool."""
        b, t, _ = x.shape
        q, k, v = self._qkv(x, cos, sin)
        k_all = self.k_cache.index_copy_(2, input_pos, k)
        v_all = self.v_cache.index_copy_(2, input_pos, v)
        k_all = k_all.repeat_interleave(self.n_rep, dim=1)
        v_all = v_all.repeat_interleave(self.n_rep, dim=1)
        y = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, -1))
        return x + self._mlp(x)

    def forward_train(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self._qkv(x, cos, sin)
        k = k.repeat_interleave(self.n_rep, dim=1)
        v = v.repeat_interleave(self.n_rep, dim=1)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        y = self.wo(y.transpose(1, 2).reshape(b, t, -1))
        x = x + F.dropout(y, p, self.training)
        return x + F.dropout(self._mlp(x), p, self.training)


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        assert cfg.dim % cfg.n_heads == 0 and cfg.n_heads % cfg.n_kv_heads == 0
        assert cfg.head_dim % 2 == 0
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.out = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.out.weight = self.tok.weight  # tied head

        hd = cfg.head_dim
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        ang = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float64), inv_freq)
        ang = torch.cat([ang, ang], dim=-1)  # [max_seq, hd], rotate_half layout
        self.register_buffer("cos", ang.cos().float(), persistent=False)
        self.register_buffer("sin", ang.sin().float(), persistent=False)
        causal = torch.ones(cfg.max_seq_len, cfg.max_seq_len, dtype=torch.bool).tril()
        self.register_buffer("causal", causal, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2 style scaled init of residual outputs
            if name.endswith("wo.weight") or name.endswith("w2.weight"):
                nn.init.normal_(p, 0.0, 0.02 / (2 * cfg.n_layers) ** 0.5)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def num_params(self):
        return sum(p.numel() for p in self.parameters())  # tied weight counted once

    @torch.no_grad()
    def reset_cache(self):
        for layer in self.layers:
            layer.k_cache.zero_()
            layer.v_cache.zero_()

    def forward(self, tokens, input_pos):
        x = self.tok(tokens)
        cos = self.cos[input_pos]
        sin = self.sin[input_pos]
        mask = self.causal[input_pos]  # [T, max_seq]: cache position j <= input_pos[t]
        for layer in self.layers:
            x = layer(x, cos, sin, input_pos, mask)
        return self.out(self.norm(x))

    def forward_train(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens)
        x = F.dropout(x, self.cfg.dropout, self.training)
        cos, sin = self.cos[:t], self.sin[:t]
        for layer in self.layers:
            x = layer.forward_train(x, cos, sin)
        return self.out(self.norm(x))

    def train_state_dict(self):
        """Weights only (no KV cache contents)."""
        return {k: v for k, v in self.state_dict().items() if not k.endswith("_cache")}
