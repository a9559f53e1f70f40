"""Transformers text models: encoders, decoders (attention variants, state-space, mixtures of
experts) and encoder-decoders."""
import torch

from .common import Outputs, hf, ids, model

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


# Attention variants: ALiBi, multi-query, interleaved rotary, soft-capping, sliding windows, QK norms.
@model("bloom", "transformers", "BloomForCausalLM (decoder, ALiBi)")
def _():
    return decoder("BloomForCausalLM", "BloomConfig", n_layer=2, n_head=4)


@model("mpt", "transformers", "MptForCausalLM (decoder, ALiBi, no biases)")
def _():
    return decoder("MptForCausalLM", "MptConfig", d_model=64, n_heads=4, n_layers=2, expansion_ratio=2,
                   max_seq_len=128, attn_config={"alibi": True, "alibi_bias_max": 8})


@model("falcon", "transformers", "FalconForCausalLM (decoder, multi-query, parallel attention)")
def _():
    return decoder("FalconForCausalLM", "FalconConfig", multi_query=True, new_decoder_architecture=False,
                   parallel_attn=True, alibi=False, bias=False)


@model("gpt_bigcode", "transformers", "GPTBigCodeForCausalLM (decoder, multi-query, learned positions)")
def _():
    return decoder("GPTBigCodeForCausalLM", "GPTBigCodeConfig", n_embd=64, n_layer=2, n_head=4, n_positions=128,
                   multi_query=True)


@model("gptj", "transformers", "GPTJForCausalLM (decoder, interleaved rotary, parallel block)")
def _():
    return decoder("GPTJForCausalLM", "GPTJConfig", n_embd=64, n_layer=2, n_head=4, n_positions=128, rotary_dim=8)


@model("cohere", "transformers", "CohereForCausalLM (decoder, interleaved rotary, logit scale)")
def _():
    return decoder("CohereForCausalLM", "CohereConfig", logit_scale=0.5)


@model("gemma2", "transformers", "Gemma2ForCausalLM (decoder, logit soft-capping, alternating sliding windows)")
def _():
    return decoder("Gemma2ForCausalLM", "Gemma2Config", head_dim=16, sliding_window=8, query_pre_attn_scalar=16,
                   attn_logit_softcapping=20.0, final_logit_softcapping=10.0)


@model("gemma3", "transformers", "Gemma3ForCausalLM (decoder, QK norm, local / global RoPE, sliding windows)")
def _():
    return decoder("Gemma3ForCausalLM", "Gemma3TextConfig", head_dim=16, sliding_window=8, query_pre_attn_scalar=16)


@model("qwen3", "transformers", "Qwen3ForCausalLM (decoder, QK norm, GQA)")
def _():
    return decoder("Qwen3ForCausalLM", "Qwen3Config", head_dim=16)


@model("starcoder2", "transformers", "Starcoder2ForCausalLM (decoder, sliding window, biases, GELU MLP)")
def _():
    return decoder("Starcoder2ForCausalLM", "Starcoder2Config", sliding_window=8)


# State-space models (the sequential / chunked scans transformers runs without CUDA kernels).
@model("mamba", "transformers", "MambaForCausalLM (selective state-space scan)")
def _():
    return decoder("MambaForCausalLM", "MambaConfig", state_size=8, expand=2, conv_kernel=4, time_step_rank=8)


@model("mamba2", "transformers", "Mamba2ForCausalLM (state-space duality, chunked scan)")
def _():
    return decoder("Mamba2ForCausalLM", "Mamba2Config", num_heads=8, head_dim=16, state_size=16, n_groups=1,
                   chunk_size=8, expand=2, conv_kernel=4)


@model("jamba", "transformers", "JambaForCausalLM (hybrid Mamba + attention layers, MoE)")
def _():
    return decoder("JambaForCausalLM", "JambaConfig", num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1,
                   expert_layer_period=2, expert_layer_offset=1, num_experts=4, num_experts_per_tok=2,
                   mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=8, use_mamba_kernels=False)


# Mixtures of experts (top-k routing; the experts' grouped product).
@model("mixtral", "transformers", "MixtralForCausalLM (MoE, top-2 of 4 experts)")
def _():
    return decoder("MixtralForCausalLM", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2)


@model("qwen2_moe", "transformers", "Qwen2MoeForCausalLM (MoE with a gated shared expert)")
def _():
    return decoder("Qwen2MoeForCausalLM", "Qwen2MoeConfig", num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=48, shared_expert_intermediate_size=96)


@model("olmoe", "transformers", "OlmoeForCausalLM (MoE, 8 experts, QK norm)")
def _():
    return decoder("OlmoeForCausalLM", "OlmoeConfig", num_experts=8, num_experts_per_tok=2, intermediate_size=48)


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


