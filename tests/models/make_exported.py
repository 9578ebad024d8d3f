"""torch.export archives for tests/cli_export_model.cmake, made with the build's own torch, and the
files a user might give in their place:
  tiny.pt2      a convolution and a linear layer, its batch dynamic (the one that runs)
  static.pt2    the same with its batch fixed at 2
  noinputs.pt2  the same saved without example inputs
  bn.pt2        batch norm in training mode after run_decompositions(): no backward
  newer.pt2     tiny.pt2 with its record saying a newer torch and export schema wrote it
  aoti.pt2      an AOTInductor package's layout (package_pt2 with stand-in files: a real
                compile takes minutes)
  script.pt2    a TorchScript archive, plain.pt2 a zip of something else, random.pt2 bytes
    python make_exported.py OUT_DIR"""
import json
import os
import sys
import warnings
import zipfile

import torch

warnings.filterwarnings("ignore")
out = sys.argv[1]


nn = torch.nn
torch.manual_seed(0)
x = torch.randn(2, 3, 8, 8)


class Tiny(nn.Module):
    """Its forward's argument is named x, as the messages name the graph's input."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))

    def forward(self, x):
        return self.body(x)


model = Tiny().eval()
batch = {0: torch.export.Dim("batch")}
program = torch.export.export(model, (x,), dynamic_shapes=(batch,))
torch.export.save(program, f"{out}/tiny.pt2")
torch.export.save(torch.export.export(model, (x,)), f"{out}/static.pt2")
program.example_inputs = None
torch.export.save(program, f"{out}/noinputs.pt2")
norm = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).train()
norm = torch.export.export(norm, (x,), dynamic_shapes=(batch,)).run_decompositions()
torch.export.save(norm, f"{out}/bn.pt2")

# The version record torch.export.save writes (models/model.json), as a newer torch would.
with zipfile.ZipFile(f"{out}/tiny.pt2") as src, zipfile.ZipFile(f"{out}/newer.pt2", "w") as dst:
    for info in src.infolist():
        data = src.read(info.filename)
        if info.filename.endswith("models/model.json"):
            record = json.loads(data)
            record["schema_version"]["major"] += 90
            record["torch_version"] = "9.0.0"
            data = json.dumps(record).encode()
        dst.writestr(info, data)

from torch.export.pt2_archive._package import package_pt2  # noqa: E402

stand_ins = []
for name in ("model.wrapper.so", "model.wrapper.cpp", "model.kernel.cpp"):
    stand_ins.append(f"{out}/{name}")
    with open(stand_ins[-1], "wb") as f:
        f.write(b"stand-in")
package_pt2(f"{out}/aoti.pt2", aoti_files=stand_ins)
for path in stand_ins:
    os.remove(path)

torch.jit.save(torch.jit.trace(model, x), f"{out}/script.pt2")
with zipfile.ZipFile(f"{out}/plain.pt2", "w") as z:
    z.writestr("weights/readme.txt", "not a model")
with open(f"{out}/random.pt2", "wb") as f:
    f.write(bytes(range(256)) * 16)
