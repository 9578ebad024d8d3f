"""Example models for `tunebench run --model` and `tunebench tune`, saved as TorchScript archives
(no weights are committed or downloaded: each is built from code with a fixed seed).

    python models/examples/make_examples.py OUT_DIR

  convnet.pt      torchvision's ResNet-18 (random weights), input 3x64x64:float32
  transformer.pt  a 2-layer GPT-style decoder (vocabulary 1000, width 128, 4 heads, causal
                  attention written out), input 64:int64:1000 (token ids)

Both are traced in eval mode from plain operators, so that the LibTorch of either build
(Debian's 1.13 or PyPI's) loads them.
"""
import math
import sys
import warnings
from pathlib import Path

import torch
import torchvision

warnings.filterwarnings("ignore")


class Block(torch.nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class Decoder(torch.nn.Module):
    def __init__(self, vocab=1000, width=128, heads=4, layers=2, context=64):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(context, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab, bias=False)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    convnet = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    torch.jit.trace(convnet, torch.randn(2, 3, 64, 64)).save(str(out / "convnet.pt"))
    decoder = Decoder().eval()
    torch.jit.trace(decoder, torch.randint(0, 1000, (2, 64))).save(str(out / "transformer.pt"))
    print(f"example models in {out}: convnet.pt (--input 3x64x64:float32), "
          f"transformer.pt (--input 64:int64:1000)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
