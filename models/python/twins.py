"""Python twins of the C++ benchmark models (models/*.cpp), for torch.export and AOTInductor.

A twin computes the same inference function as its C++ model with the same parameter and buffer
names, so the C++ model's own state dict loads into it with strict=True (a name or shape that
differs is an error, not a silent mismatch). The twin's structure comes from the model's resolved
options (what `tunebench models` prints as its config) and from the shapes in that state dict
(DLRM's table rows and MLP widths, ResNet's blocks per stage), so one function serves every
preset and option.

  resnet50  torchvision's Bottleneck blocks under torchvision's names (conv1, bn1, layer1.0.conv1,
            layer1.0.downsample.0, fc); the "full" preset is torchvision's resnet50 itself
  gpt       models/gpt.cpp: pre-LayerNorm blocks (blocks.N.ln_1, .attn.c_attn, .attn.c_proj,
            .ln_2, .c_fc, .mlp_proj), tied embeddings, logits cut to the real vocabulary
  dlrm      models/dlrm.cpp: bottom and top MLPs as Sequential (Linear, ReLU, …), EmbeddingBag
            tables (sum), pairwise dot interaction below the diagonal, sigmoid
"""
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F


class TwinError(ValueError):
    """The C++ model's options or state have no twin (named in the message)."""


# --- ResNet-50 -------------------------------------------------------------------------------


def resnet50(config, state):
    import torchvision
    from torchvision.models.resnet import Bottleneck

    width = config["width"]
    blocks = []
    for stage in range(1, 5):
        found = {int(m.group(1)) for k in state
                 if (m := re.match(rf"layer{stage}\.(\d+)\.", k))}
        blocks.append(len(found))
    if blocks == [3, 4, 6, 3] and width == 64:
        model = torchvision.models.resnet50(num_classes=config["num_classes"])
    else:
        # torchvision's ResNet with the stem's width as an option: its own Bottleneck blocks and
        # layer builder, started from `width` channels instead of 64.
        model = torchvision.models.ResNet(Bottleneck, blocks, num_classes=config["num_classes"])
        model.inplanes = width
        model.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        model.bn1 = nn.BatchNorm2d(width)
        model.layer1 = model._make_layer(Bottleneck, width, blocks[0])
        model.layer2 = model._make_layer(Bottleneck, width * 2, blocks[1], stride=2)
        model.layer3 = model._make_layer(Bottleneck, width * 4, blocks[2], stride=2)
        model.layer4 = model._make_layer(Bottleneck, width * 8, blocks[3], stride=2)
        model.fc = nn.Linear(width * 8 * Bottleneck.expansion, config["num_classes"])
    if config.get("conv_bias"):
        # The C++ option: a (redundant) bias on every convolution before its BatchNorm.
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                m.bias = nn.Parameter(torch.zeros(m.out_channels))
    return model


# --- GPT -------------------------------------------------------------------------------------


class LayerNorm(nn.Module):
    def __init__(self, channels, builtin):
        super().__init__()
        self.builtin = builtin
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        if self.builtin:
            return F.layer_norm(x, (x.size(-1),), self.weight, self.bias, 1e-5)
        mean = x.mean(-1, keepdim=True)
        var = (x - mean).pow(2).mean(-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + 1e-5) * self.weight + self.bias


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        self.n_head = cfg["n_head"]
        self.fused = cfg["fused_attention"]
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        if not cfg["causal_mask_fly"]:
            n = cfg["block_size"]
            self.register_buffer("mask", torch.ones(n, n, dtype=torch.bool).tril())
        else:
            self.mask = None

    def forward(self, x):
        B, T, C = x.shape
        D = C // self.n_head
        q, k, v = (t.view(B, T, self.n_head, D).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        if self.mask is not None:
            mask = self.mask[:T, :T]
        else:
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if self.fused:
            if self.mask is not None:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
            att = att.masked_fill(mask.logical_not(), float("-inf"))
            y = torch.softmax(att, -1).matmul(v)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class GptBlock(nn.Module):
    def __init__(self, cfg, hidden):
        super().__init__()
        C, builtin = cfg["n_embd"], cfg["builtin_ops"]
        self.builtin = builtin
        self.ln_1 = LayerNorm(C, builtin)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = LayerNorm(C, builtin)
        self.c_fc = nn.Linear(C, hidden)
        self.mlp_proj = nn.Linear(hidden, C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = self.c_fc(self.ln_2(x))
        h = F.gelu(h, approximate="tanh") if self.builtin else gelu_tanh(h)
        return x + self.mlp_proj(h)


class Gpt(nn.Module):
    def __init__(self, cfg, vocab_rows, hidden):
        super().__init__()
        self.vocab_size = cfg["vocab_size"]
        self.wte = nn.Embedding(vocab_rows, cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["block_size"], cfg["n_embd"])
        self.blocks = nn.ModuleList(GptBlock(cfg, hidden) for _ in range(cfg["n_layer"]))
        self.ln_f = LayerNorm(cfg["n_embd"], cfg["builtin_ops"])

    def forward(self, tokens):
        T = tokens.size(1)
        x = self.wte(tokens) + self.wpe(torch.arange(T, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied
        if logits.size(-1) != self.vocab_size:
            logits = logits.narrow(-1, 0, self.vocab_size)
        return logits


def gpt(config, state):
    # Padded vocabulary rows and MLP widths as the C++ model built them (vocab_pad, dims_mult8).
    return Gpt(config, state["wte.weight"].shape[0], state["blocks.0.c_fc.weight"].shape[0])


# --- DLRM ------------------------------------------------------------------------------------


def mlp_from_state(state, prefix, relu_last):
    """Linear (+ ReLU) layers at the Sequential indices the C++ model registered them under."""
    linears = sorted(int(m.group(1)) for k in state
                     if (m := re.fullmatch(rf"{prefix}\.(\d+)\.weight", k)))
    layers = []
    for i, index in enumerate(linears):
        out_features, in_features = state[f"{prefix}.{index}.weight"].shape
        if index != len(layers):
            raise TwinError(f"{prefix}: Linear layer at index {index}, expected {len(layers)}")
        layers.append(nn.Linear(in_features, out_features))
        if i + 1 < len(linears) or relu_last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Dlrm(nn.Module):
    def __init__(self, state):
        super().__init__()
        self.bottom = mlp_from_state(state, "bottom", True)
        tables = sorted(int(m.group(1)) for k in state
                        if (m := re.fullmatch(r"tables\.(\d+)\.weight", k)))
        self.tables = nn.ModuleList(
            nn.EmbeddingBag(*state[f"tables.{t}.weight"].shape, mode="sum") for t in tables)
        self.top = mlp_from_state(state, "top", False)

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)  # [B, d]
        B, d = x.shape
        features = [x] + [table(indices[t], offsets) for t, table in enumerate(self.tables)]
        T = torch.cat(features, 1).view(B, len(features), d)
        Z = torch.bmm(T, T.transpose(1, 2))
        pairs = torch.tril_indices(len(features), len(features), offset=-1, device=x.device)
        flat = Z[:, pairs[0], pairs[1]]
        return torch.sigmoid(self.top(torch.cat([x, flat], 1)))


def dlrm(config, state):
    return Dlrm(state)


BUILDERS = {"resnet50": resnet50, "gpt": gpt, "dlrm": dlrm}


def build(model, config, state):
    """The twin of `model` with `config` (the C++ model's resolved options), holding `state`
    (the C++ model's named parameters and buffers), in eval mode. Raises TwinError when a name or
    shape differs."""
    if model not in BUILDERS:
        raise TwinError(f"no Python twin of model '{model}'; twins: {', '.join(BUILDERS)}")
    twin = BUILDERS[model](config, state)
    own = twin.state_dict()
    problems = []
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing:
        problems.append("the twin has, the C++ model lacks: " + ", ".join(missing))
    if unexpected:
        problems.append("the C++ model has, the twin lacks: " + ", ".join(unexpected))
    problems += [f"{name} is {list(tensor.shape)} in C++, {list(own[name].shape)} in the twin"
                 for name, tensor in state.items()
                 if name in own and own[name].shape != tensor.shape]
    if problems:
        raise TwinError(f"{model}: the twin does not match; " + "; ".join(problems))
    twin.load_state_dict(state, strict=True)
    return twin.eval()


def loss(model, twin, forward, inputs, target):
    """The training loss of `model` as the C++ model computes it (models/*.cpp, loss()), with the
    twin's forward called through `forward` (the eager twin or its compiled form)."""
    if model == "gpt":
        logits = forward(*inputs)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))
    if model == "resnet50":
        return F.cross_entropy(forward(*inputs), target)
    if model == "dlrm":
        # The C++ model takes BCE of its logits; the twin's forward ends in the sigmoid (its
        # inference output), so the same loss is BCE of that probability.
        return F.binary_cross_entropy(forward(*inputs), target)
    raise TwinError(f"no training loss for model '{model}'")
