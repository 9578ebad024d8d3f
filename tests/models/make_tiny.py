"""Tiny TorchScript archives for tests/cli_file_model.cmake: a convolutional model, one with
no trainable parameter, and one whose forward returns a dict (not a tensor or tuple).
    python make_tiny.py OUT_DIR"""
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
out = sys.argv[1]


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.conv(x).mean((2, 3)))


class Frozen(Conv):
    def __init__(self):
        super().__init__()
        for p in self.parameters():
            p.requires_grad_(False)


class Dict(torch.nn.Module):
    def forward(self, x):
        return {"y": x * 2}


torch.manual_seed(0)
torch.jit.trace(Conv(), torch.randn(1, 3, 8, 8)).save(f"{out}/conv.pt")
torch.jit.trace(Frozen(), torch.randn(1, 3, 8, 8)).save(f"{out}/frozen.pt")
torch.jit.script(Dict()).save(f"{out}/dict.pt")
