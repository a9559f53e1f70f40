"""Vision models: CNNs, vision transformers, hybrids, segmentation, detection heads, optical flow."""
import torch
import torch.nn as nn

from .common import Outputs, hf, image, model, randomize_norms

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




# ---------------------------------------------------------------- vision transformers at a new resolution
@model("vit_interp", "transformers", "ViTModel at 48x48 for a 32x32 config (bicubic position-embedding interpolation)")
def _():
    m = hf("ViTModel", "ViTConfig", image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
           num_attention_heads=4, intermediate_size=128)
    return Outputs(m, ["pixel_values"], ["last_hidden_state"], interpolate_pos_encoding=True), (image(48),)


@model("dinov2", "transformers", "Dinov2Model at 48x48 for a 32x32 config (antialiased bicubic interpolation, layer scale)")
def _():
    m = hf("Dinov2Model", "Dinov2Config", image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
           num_attention_heads=4, mlp_ratio=2)
    return Outputs(m, ["pixel_values"], ["last_hidden_state", "pooler_output"]), (image(48),)


@model("vit_dynamic", "timm", "timm ViT with dynamic_img_size at 80x48 (position embeddings resampled per input)")
def _():
    import timm
    m = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, patch_size=16, embed_dim=64, depth=2,
                          num_heads=4, num_classes=10, dynamic_img_size=True)
    return m, (image(80, 48),)


# ---------------------------------------------------------------- timm mobile CNNs
def timm_cnn(name, size=64, **kw):
    import timm
    m = timm.create_model(name, pretrained=False, num_classes=10, **kw)
    return randomize_norms(m, image(size)), (image(size),)


@model("mobilenetv4", "timm", "MobileNetV4-Conv-Small (universal inverted bottlenecks)")
def _():
    return timm_cnn("mobilenetv4_conv_small")


@model("ghostnet", "timm", "GhostNet (ghost modules: cheap depthwise features, SE)")
def _():
    return timm_cnn("ghostnet_050")


@model("lcnet", "timm", "PP-LCNet (depthwise separable, hard-swish, SE)")
def _():
    return timm_cnn("lcnet_050")


@model("mobileone", "timm", "MobileOne-S0 (train-time overparameterised branches)")
def _():
    return timm_cnn("mobileone_s0")


@model("repvit", "timm", "RepViT-M0.9 (re-parameterised depthwise, mobile ViT-style macro design)")
def _():
    return timm_cnn("repvit_m0_9")


@model("efficientvit_msra", "timm", "EfficientViT-M0 (MSRA: cascaded group attention, fixed-resolution biases)")
def _():
    return timm_cnn("efficientvit_m0", size=64, img_size=64)


# ---------------------------------------------------------------- hybrid conv / attention networks
@model("fastvit", "timm", "FastViT-T8 (RepMixer token mixing, conditional positional encoding)")
def _():
    return timm_cnn("fastvit_t8")


@model("levit", "timm", "LeViT-128S (conv stem, attention with learned biases, hard-swish)")
def _():
    return timm_cnn("levit_128s", size=64, img_size=64)


@model("mobilevitv2", "timm", "MobileViTv2-0.5 (separable linear attention)")
def _():
    return timm_cnn("mobilevitv2_050")


@model("efficientformerv2", "timm", "EfficientFormerV2-S0 (4D attention with talking heads, strided attention)")
def _():
    return timm_cnn("efficientformerv2_s0", size=64, img_size=64)


@model("edgenext", "timm", "EdgeNeXt-XXS (split depthwise transpose attention, cross-covariance)")
def _():
    return timm_cnn("edgenext_xx_small")


# ---------------------------------------------------------------- detection heads
@model("yolos", "transformers", "YolosForObjectDetection (ViT detector: detection tokens, class + box MLP heads)")
def _():
    m = hf("YolosForObjectDetection", "YolosConfig", image_size=[48, 64], patch_size=8, hidden_size=64,
           num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, num_detection_tokens=10, num_labels=5)
    return Outputs(m, ["pixel_values"], ["logits", "pred_boxes"]), (image(48, 64),)


@model("detr", "transformers", "DetrForObjectDetection (ResNet backbone, encoder-decoder queries, box MLP)")
def _():
    import transformers
    backbone = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                                         out_features=["stage4"])
    m = hf("DetrForObjectDetection", "DetrConfig", use_timm_backbone=False, backbone_config=backbone,
           use_pretrained_backbone=False, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
           decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=10, num_labels=5)
    return Outputs(randomize_norms(m, image()), ["pixel_values"], ["logits", "pred_boxes"]), (image(),)


class _SsdHead(nn.Module):
    """Backbone and SSD head of torchvision's SSDLite; the anchors' decoding and NMS that follow
    are data-dependent post-processing, outside the exported graph as in deployed detectors."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        feats = list(self.m.backbone(x).values())
        out = self.m.head(feats)
        return out["bbox_regression"], out["cls_logits"]


@model("ssdlite", "torchvision", "SSDLite320 head on MobileNetV3-Large features (box regression + class logits)")
def _():
    import torchvision
    m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                   num_classes=5, width_mult=0.5)
    return randomize_norms(_SsdHead(m), image(128)), (image(128),)


# ---------------------------------------------------------------- optical flow
class _LastFlow(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, a, b):
        return self.m(a, b, num_flow_updates=4)[-1]


@model("raft", "torchvision", "RAFT-Small optical flow (correlation pyramid, grid_sample lookups, ConvGRU updates)")
def _():
    import torchvision
    m = torchvision.models.optical_flow.raft_small(weights=None)
    return _LastFlow(m.eval()), (image(128), image(128, seed=1))
