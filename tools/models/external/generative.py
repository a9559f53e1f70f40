"""Generative-model parts: a diffusion-style U-Net, diffusion VAE decoders."""
import torch
import torch.nn as nn

from .common import image, model

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




# ---------------------------------------------------------------- diffusion VAE decoders
class _Decode(nn.Module):
    """The decoder half a diffusion pipeline runs on device: latents in, image out."""

    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, z):
        return self.vae.decode(z).sample


def latents(c=4, h=8, seed=0):
    return torch.randn(1, c, h, h, generator=torch.Generator().manual_seed(seed))


@model("vae_decoder", "diffusers", "AutoencoderKL decoder (Stable Diffusion VAE: GroupNorm ResNet blocks, mid attention)")
def _():
    from diffusers import AutoencoderKL
    m = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32),
                      down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                      layers_per_block=1, norm_num_groups=8, sample_size=32)
    return _Decode(m), (latents(),)


@model("taesd", "diffusers", "AutoencoderTiny decoder (TAESD: plain conv blocks, clamped latents)")
def _():
    from diffusers import AutoencoderTiny
    m = AutoencoderTiny(encoder_block_out_channels=(16, 16, 16, 16), decoder_block_out_channels=(16, 16, 16, 16),
                        num_encoder_blocks=(1, 1, 1, 1), num_decoder_blocks=(1, 1, 1, 1), latent_channels=4)
    return _Decode(m), (latents(),)
