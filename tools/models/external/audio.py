"""Audio models: speech encoders and encoder-decoders, audio classifiers."""
import torch

from .common import Outputs, hf, ids, model

# ---------------------------------------------------------------- speech
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




# ---------------------------------------------------------------- audio classifiers
@model("ast", "transformers", "ASTForAudioClassification (audio spectrogram transformer, patch overlap)")
def _():
    m = hf("ASTForAudioClassification", "ASTConfig", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
           intermediate_size=128, num_mel_bins=32, max_length=64, frequency_stride=10, time_stride=10, num_labels=5)
    spec = torch.randn(1, 64, 32, generator=torch.Generator().manual_seed(0))
    return Outputs(m, ["input_values"], ["logits"]), (spec,)


@model("wav2vec2_cls", "transformers", "Wav2Vec2ForSequenceClassification (keyword spotting: pooled projector head)")
def _():
    m = hf("Wav2Vec2ForSequenceClassification", "Wav2Vec2Config", **W2V_CFG, classifier_proj_size=32, num_labels=5)
    return Outputs(m, ["input_values"], ["logits"]), (waveform(),)


@model("whisper_cls", "transformers", "WhisperForAudioClassification (encoder, weighted layer sum, pooled head)")
def _():
    m = hf("WhisperForAudioClassification", "WhisperConfig", **WHISPER_CFG, use_weighted_layer_sum=True,
           classifier_proj_size=32, num_labels=5)
    return Outputs(m, ["input_features"], ["logits"]), (mel(),)
