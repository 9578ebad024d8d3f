#!/usr/bin/env python3
"""The Python side of the C++-vs-Python comparison (bench/compare_python.sh).

Runs the same models and steps as bench/models_bench.cpp through Python torch: torchvision's
ResNet-50 and a GPT written as models/gpt.cpp builds it by default (pre-LayerNorm, built-in
layer_norm and tanh-GELU, scaled-dot-product attention with the causal mask on the fly, tied
embeddings). Same batch sizes, warm-up (2 steps), 5 repetitions of 3 timed steps; prints one
JSON object per benchmark: the median and all repetition times in milliseconds per step.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab, block_size):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        for name, p in self.named_parameters():
            if "ln_" in name:
                continue
            if p.dim() == 1:
                nn.init.zeros_(p)
            else:
                proj = name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight")
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer) if proj else 0.02)

    def forward(self, tokens):
        T = tokens.size(1)
        x = self.wte(tokens) + self.wpe(torch.arange(T, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def resnet50(batch):
    model = torchvision.models.resnet50(weights=None)
    x = torch.randn(batch, 3, 224, 224)
    y = torch.randint(1000, (batch,))
    return model, (x,), lambda out: F.cross_entropy(out, y)


def gpt_small(batch):
    # The `small` preset: 4 layers of GPT-2 small, 256 tokens.
    model = Gpt(n_layer=4, n_head=12, n_embd=768, vocab=50257, block_size=1024)
    tokens = torch.randint(50257, (batch, 257))
    x, y = tokens[:, :256].contiguous(), tokens[:, 1:].contiguous()
    return model, (x,), lambda out: F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))


BENCHMARKS = {
    "resnet50_full_infer_b8": (resnet50, 8, False),
    "resnet50_full_train_b8": (resnet50, 8, True),
    "gpt_small_infer_b4": (gpt_small, 4, False),
    "gpt_small_train_b4": (gpt_small, 4, True),
}


def run(name, repetitions, iterations):
    make, batch, train = BENCHMARKS[name]
    torch.manual_seed(1)
    model, inputs, loss_fn = make(batch)
    model.train(train)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)

    def step():
        if train:
            opt.zero_grad()
            loss_fn(model(*inputs)).backward()
            opt.step()
        else:
            with torch.no_grad():
                model(*inputs)

    for _ in range(2):
        step()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(iterations):
            step()
        times.append((time.perf_counter() - start) / iterations * 1e3)
    return {"name": name, "median_ms": statistics.median(times), "repetitions_ms": times,
            "torch": torch.__version__, "threads": torch.get_num_threads()}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, required=True, help="intra-op threads")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all): "
                        + ", ".join(BENCHMARKS))
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; valid: {', '.join(BENCHMARKS)}")
    args.names = args.names or list(BENCHMARKS)
    torch.set_num_threads(args.threads)
    for name in args.names:
        print(json.dumps(run(name, args.repetitions, args.iterations)), flush=True)


if __name__ == "__main__":
    main()
