"""PyTorch implementations of the five trained architectures, written for the PyTorch baselines
(`benchmarks/torch_baselines.py`) the way a competent PyTorch user would: batched tensors, no Python loop over
windows or channels, 1x1 convolutions as matrix products, the three attention projections fused into one.

Written from the spec and the parity fixtures' README (`/work/shared/parity/README.md`, sections 3-4), not from
the original implementation. Every module's `state_dict()` has the key names and layouts of the parity fixtures,
so a fixture loads with `load_state_dict(strict=True)` and reproduces its `output` (`check_fixture`), and the same
state dict loads into the engine's Flax module through `sfbench_jax.models.parity.load_state`.

What lives here: `DLinear`, `GRU`, `ModernTCN`, `PatchTST`, `TSMixer` (each `(B, n, m) -> (B, H, targets)`),
`build_torch_model` (an architecture by registry name with the engine's default hyperparameters overlaid), and
`check_fixture` / `fixture_paths` (parity of these modules against the fixtures). RevIN and SeasonalNaive are
not implemented (the baselines time the default configurations, which use neither).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

#: The parity fixtures' folder: `../shared/parity` beside the repository, as for the tests (see its README).
PARITY_ROOT = Path(__file__).resolve().parents[2] / "shared" / "parity"


class _Targets(nn.Module):
    """Target-channel selection along the last axis (no state; identity when every channel is a target)."""

    def __init__(self, num_channels: int, target_indices: Sequence[int]) -> None:
        super().__init__()
        targets = [int(i) for i in target_indices]
        self.all = targets == list(range(num_channels))
        self.register_buffer("index", torch.tensor(targets, dtype=torch.long), persistent=False)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y if self.all else y.index_select(-1, self.index)


def _dropout(rate: float) -> nn.Module:
    return nn.Dropout(rate) if rate > 0 else nn.Identity()


def _activation(name: str) -> nn.Module:
    return nn.GELU() if name == "gelu" else nn.ReLU()  # exact GELU, as the reference


def _pointwise(conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """A 1x1 `Conv1d` applied as a Linear on channels-last `x`."""
    return F.linear(x, conv.weight[:, :, 0], conv.bias)


# --- DLinear -------------------------------------------------------------------------------------------------


class DLinear(nn.Module):
    """Edge-replicated moving-average decomposition, then one linear map over time per part (shared by the
    channels, or one per channel with `individual`)."""

    def __init__(self, *, input_len: int, horizon: int, num_channels: int, target_indices: Sequence[int],
                 moving_avg: int = 25, individual: bool = False, init_weights: bool = False) -> None:
        super().__init__()
        self.kernel, self.individual = moving_avg, individual
        copies = num_channels if individual else 1

        def maps() -> nn.Module:
            layers = [nn.Linear(input_len, horizon) for _ in range(copies)]
            if init_weights:
                for layer in layers:
                    nn.init.constant_(layer.weight, 1.0 / input_len)
            return nn.ModuleList(layers) if individual else layers[0]

        self.Linear_Seasonal, self.Linear_Trend = maps(), maps()
        self.targets = _Targets(num_channels, target_indices)

    def _map(self, part: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if not self.individual:
            return part(x)
        weight = torch.stack([layer.weight for layer in part])  # (m, H, n)
        bias = torch.stack([layer.bias for layer in part])
        return torch.einsum("bcn,chn->bch", x, weight) + bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad = (self.kernel - 1) // 2
        channels_first = x.transpose(1, 2)  # (B, m, n)
        padded = F.pad(channels_first, (pad, pad), mode="replicate")
        trend = F.avg_pool1d(padded, self.kernel, stride=1)
        y = self._map(self.Linear_Seasonal, channels_first - trend) + self._map(self.Linear_Trend, trend)
        return self.targets(y.transpose(1, 2))


# --- GRU -----------------------------------------------------------------------------------------------------


class GRU(nn.Module):
    """`nn.GRU` over the window; direct: one linear map of the last hidden state to every (step, channel);
    autoregressive: one step per horizon step, the prediction fed back into the target channels."""

    def __init__(self, *, input_len: int, horizon: int, num_channels: int, target_indices: Sequence[int],
                 d_hidden: int = 64, n_layers: int = 1, autoregressive: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        del input_len
        self.horizon, self.num_channels, self.autoregressive = horizon, num_channels, autoregressive
        self.gru = nn.GRU(num_channels, d_hidden, num_layers=n_layers, batch_first=True,
                          dropout=dropout if n_layers > 1 else 0.0)
        self.fc = nn.Linear(d_hidden, num_channels if autoregressive else num_channels * horizon)
        self.targets = _Targets(num_channels, target_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs, hidden = self.gru(x)
        if not self.autoregressive:
            y = self.fc(outputs[:, -1]).view(x.shape[0], self.horizon, self.num_channels)
            return self.targets(y)
        row, steps = x[:, -1], []
        prediction = self.targets(self.fc(outputs[:, -1]))
        for _ in range(self.horizon - 1):
            steps.append(prediction)
            row = row.clone()
            row[:, self.targets.index] = prediction
            outputs, hidden = self.gru(row[:, None], hidden)
            prediction = self.targets(self.fc(outputs[:, -1]))
        steps.append(prediction)
        return torch.stack(steps, dim=1)


# --- ModernTCN -----------------------------------------------------------------------------------------------


class _ModernTCNBlock(nn.Module):
    """Depthwise large + small kernel convolutions (each with BatchNorm), a BatchNorm shared by the variables,
    then the per-variable and the cross-variable feed-forward networks (grouped 1x1 convolutions), residual."""

    def __init__(self, m: int, d: int, ratio: int, large: int, small: int, dropout: float) -> None:
        super().__init__()
        self.m, self.d = m, d

        def branch(size: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv1d(m * d, m * d, size, padding=size // 2, groups=m * d, bias=False),
                                 nn.BatchNorm1d(m * d))

        self.temporal_conv = nn.ModuleDict({"large_branch": branch(large), "small_branch": branch(small)})
        self.temporal_norm = nn.BatchNorm1d(d)
        self.ffn_features_in = nn.Conv1d(m * d, m * d * ratio, 1, groups=m)
        self.ffn_features_out = nn.Conv1d(m * d * ratio, m * d, 1, groups=m)
        self.ffn_variables_in = nn.Conv1d(d * m, d * m * ratio, 1, groups=d)
        self.ffn_variables_out = nn.Conv1d(d * m * ratio, d * m, 1, groups=d)
        self.drops = nn.ModuleList([_dropout(dropout) for _ in range(4)])

    def _ffn(self, x: torch.Tensor, conv_in: nn.Conv1d, conv_out: nn.Conv1d, groups: int, first: int) -> torch.Tensor:
        """Grouped 1x1 feed-forward on `x (B, G, C, P)` as batched products over the G groups."""
        w_in = conv_in.weight[:, :, 0].view(groups, -1, x.shape[2])  # (G, C r, C)
        w_out = conv_out.weight[:, :, 0].view(groups, x.shape[2], -1)  # (G, C, C r)
        y = torch.matmul(w_in, x) + conv_in.bias.view(groups, -1, 1)
        y = F.gelu(self.drops[first](y))
        y = torch.matmul(w_out, y) + conv_out.bias.view(groups, -1, 1)
        return self.drops[first + 1](y)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, m, d, P)
        batch, m, d, patches = x.shape
        y = x.reshape(batch, m * d, patches)
        y = self.temporal_conv["large_branch"](y) + self.temporal_conv["small_branch"](y)
        y = self.temporal_norm(y.reshape(batch * m, d, patches)).reshape(batch, m, d, patches)
        y = self._ffn(y, self.ffn_features_in, self.ffn_features_out, m, 0)
        y = self._ffn(y.transpose(1, 2), self.ffn_variables_in, self.ffn_variables_out, d, 2).transpose(1, 2)
        return x + y


class _Head(nn.Module):
    def __init__(self, features: int, horizon: int) -> None:
        super().__init__()
        self.linear = nn.Linear(features, horizon)


class ModernTCN(nn.Module):
    """Patch stem per channel (right edge replicated), blocks of large-kernel depthwise convolutions and
    feed-forward networks, a flatten head over (d_model, patches)."""

    def __init__(self, *, input_len: int, horizon: int, num_channels: int, target_indices: Sequence[int],
                 d_model: int = 64, num_blocks: int = 1, large_size: int = 31, small_size: int = 5,
                 ffn_ratio: int = 1, patch_size: int = 8, patch_stride: int = 4, dropout: float = 0.1,
                 head_dropout: float = 0.0, individual: bool = False) -> None:
        super().__init__()
        if individual:
            raise ValueError("ModernTCN individual=true is not implemented here (the benchmark never uses it).")
        self.m, self.d, self.pad = num_channels, d_model, patch_size - patch_stride
        self.patches = (input_len + self.pad - patch_size) // patch_stride + 1
        self.stem = nn.Sequential(nn.Conv1d(1, d_model, patch_size, stride=patch_stride), nn.BatchNorm1d(d_model))
        self.blocks = nn.ModuleList([_ModernTCNBlock(num_channels, d_model, ffn_ratio, large_size, small_size,
                                                     dropout) for _ in range(num_blocks)])
        self.forecast_head = _Head(d_model * self.patches, horizon)
        self.head_dropout = _dropout(head_dropout)
        self.targets = _Targets(num_channels, target_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        z = F.pad(x.transpose(1, 2).reshape(batch * self.m, 1, -1), (0, self.pad), mode="replicate")
        z = self.stem(z).view(batch, self.m, self.d, self.patches)
        for block in self.blocks:
            z = block(z)
        y = self.head_dropout(self.forecast_head.linear(z.reshape(batch, self.m, -1)))
        return self.targets(y.transpose(1, 2))


# --- PatchTST ------------------------------------------------------------------------------------------------


class _Attention(nn.Module):
    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.query_projection, self.key_projection, self.value_projection, self.out_projection = (
            nn.Linear(d_model, d_model) for _ in range(4))


class _EncoderLayer(nn.Module):
    """Post-norm encoder layer with residual attention: the unscaled scores accumulate over the layers."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, activation: str) -> None:
        super().__init__()
        self.heads = n_heads
        self.attention = _Attention(d_model)
        self.conv1, self.conv2 = nn.Conv1d(d_model, d_ff, 1), nn.Conv1d(d_ff, d_model, 1)
        self.norm1 = nn.ModuleDict({"1": nn.BatchNorm1d(d_model)})  # state-dict names `norm1.1.*`
        self.norm2 = nn.ModuleDict({"1": nn.BatchNorm1d(d_model)})
        self.attention_dropout, self.dropout = _dropout(dropout), _dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, x: torch.Tensor, previous: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        tokens, length, d_model = x.shape
        a = self.attention
        weight = torch.cat([a.query_projection.weight, a.key_projection.weight, a.value_projection.weight])
        bias = torch.cat([a.query_projection.bias, a.key_projection.bias, a.value_projection.bias])
        qkv = F.linear(x, weight, bias).view(tokens, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(qkv[0], qkv[1].transpose(-1, -2))
        if previous is not None:
            scores = scores + previous
        weights = self.attention_dropout(torch.softmax(scores * (1.0 / math.sqrt(qkv.shape[-1])), dim=-1))
        context = torch.matmul(weights, qkv[2]).transpose(1, 2).reshape(tokens, length, d_model)
        x = self.norm1["1"]((x + self.dropout(a.out_projection(context))).view(-1, d_model)).view(x.shape)
        y = self.dropout(_pointwise(self.conv2, self.dropout(self.activation(_pointwise(self.conv1, x)))))
        return self.norm2["1"]((x + y).view(-1, d_model)).view(x.shape), scores


class _PatchEmbedding(nn.Module):
    def __init__(self, patch_len: int, d_model: int, patches: int) -> None:
        super().__init__()
        self.value_embedding = nn.Linear(patch_len, d_model)
        self.W_pos = nn.Parameter(torch.empty(patches, d_model).uniform_(-0.02, 0.02))


class _Encoder(nn.Module):
    def __init__(self, layers: list[_EncoderLayer]) -> None:
        super().__init__()
        self.attn_layers = nn.ModuleList(layers)


class PatchTST(nn.Module):
    """Instance normalisation, patches per channel (right edge replicated), a post-norm Transformer encoder with
    residual attention over the patches, a flatten head over (d_model, patches), de-normalisation."""

    def __init__(self, *, input_len: int, horizon: int, num_channels: int, target_indices: Sequence[int],
                 d_model: int = 16, d_ff: int = 128, n_layers_enc: int = 2, n_heads: int = 4, patch_len: int = 16,
                 stride: int = 8, dropout: float = 0.1, factor: int = 1, activation: str = "gelu") -> None:
        super().__init__()
        del factor  # no effect (parity README 4.4)
        self.m, self.d, self.patch_len, self.stride = num_channels, d_model, patch_len, stride
        self.patches = (input_len + stride - patch_len) // stride + 1
        self.patch_embedding = _PatchEmbedding(patch_len, d_model, self.patches)
        self.encoder = _Encoder([_EncoderLayer(d_model, n_heads, d_ff, dropout, activation)
                                 for _ in range(n_layers_enc)])
        self.flatten_head = _Head(d_model * self.patches, horizon)
        self.embedding_dropout, self.head_dropout = _dropout(dropout), _dropout(dropout)
        self.targets = _Targets(num_channels, target_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        mean = x.mean(dim=1, keepdim=True)
        scale = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + 1e-5)
        z = F.pad(((x - mean) / scale).transpose(1, 2), (0, self.stride), mode="replicate")
        patches = z.unfold(-1, self.patch_len, self.stride).reshape(batch * self.m, self.patches, self.patch_len)
        embedding = self.patch_embedding
        tokens = self.embedding_dropout(embedding.value_embedding(patches) + embedding.W_pos)
        scores = None
        for layer in self.encoder.attn_layers:
            tokens, scores = layer(tokens, scores)
        flat = tokens.view(batch, self.m, self.patches, self.d).transpose(2, 3).reshape(batch, self.m, -1)
        y = self.head_dropout(self.flatten_head.linear(flat)).transpose(1, 2)
        return self.targets(y * scale + mean)


# --- TSMixer -------------------------------------------------------------------------------------------------


class _FlatBatchNorm(nn.Module):
    """BatchNorm over the flattened (n, m) cells of each window (state-dict names `<norm>.norm.*`)."""

    def __init__(self, cells: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(cells, eps=1e-3, momentum=0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.reshape(x.shape[0], -1)).view(x.shape)


class _MixerBlock(nn.Module):
    """`r = x + act(time-linear(norm(x)))`, `out = r + fc2(act(fc1(norm(r))))`, dropout after each activation
    and after the feature MLP."""

    def __init__(self, n: int, m: int, ff_dim: int, norm_type: str, activation: str, dropout: float) -> None:
        super().__init__()
        def norm() -> nn.Module:
            return nn.LayerNorm((n, m), eps=1e-3) if norm_type == "L" else _FlatBatchNorm(n * m)

        self.temporal_norm, self.feature_norm = norm(), norm()
        self.temporal_mixing = nn.Linear(n, n)
        self.feature_fc1, self.feature_fc2 = nn.Linear(m, ff_dim), nn.Linear(ff_dim, m)
        self.activation = _activation(activation)
        self.drops = nn.ModuleList([_dropout(dropout) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = self.temporal_mixing(self.temporal_norm(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.drops[0](self.activation(mixed))
        y = self.drops[1](self.activation(self.feature_fc1(self.feature_norm(x))))
        return x + self.drops[2](self.feature_fc2(y))


class TSMixer(nn.Module):
    """Mixer blocks over the (n, m) window, then a linear projection of time n -> H per channel."""

    def __init__(self, *, input_len: int, horizon: int, num_channels: int, target_indices: Sequence[int],
                 n_block: int = 2, ff_dim: int = 64, norm_type: str = "L", activation: str = "relu",
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.mixer_blocks = nn.ModuleList([_MixerBlock(input_len, num_channels, ff_dim, norm_type, activation,
                                                       dropout) for _ in range(n_block)])
        self.temporal_projection = nn.Linear(input_len, horizon)
        self.targets = _Targets(num_channels, target_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.mixer_blocks:
            x = block(x)
        return self.targets(self.temporal_projection(x.transpose(1, 2)).transpose(1, 2))


# --- construction and parity ---------------------------------------------------------------------------------

#: Registry name -> module class (the engine's names, `sfbench_jax.models.registry.MODELS`).
TORCH_MODELS: dict[str, type[nn.Module]] = {"dlinear": DLinear, "gru": GRU, "moderntcn": ModernTCN,
                                            "patchtst": PatchTST, "tsmixer": TSMixer}
#: The fixtures' `meta.architecture` -> registry name.
FIXTURE_ARCHITECTURES = {"DLinear": "dlinear", "GRU": "gru", "ModernTCN": "moderntcn", "PatchTST": "patchtst",
                         "TSMixer": "tsmixer"}


def build_torch_model(architecture: str, hparams: Mapping[str, Any] | None = None, *, input_len: int, horizon: int,
                      num_channels: int, target_indices: Sequence[int], seed: int = 0) -> nn.Module:
    """The PyTorch module of `architecture` with the engine's default hyperparameters overlaid by `hparams`
    (validated by the engine's config dataclass), PyTorch's default initialisation under `torch.manual_seed(seed)`.

    Raises:
        ValueError: unknown architecture or hyperparameter (the engine's message names the valid ones).
    """
    from sfbench_jax.models.registry import make_config

    if architecture not in TORCH_MODELS:
        raise ValueError(f"no PyTorch baseline for {architecture!r}; known: {sorted(TORCH_MODELS)}.")
    config = dataclasses.asdict(make_config(architecture, dict(hparams or {})))
    torch.manual_seed(seed)
    return TORCH_MODELS[architecture](input_len=input_len, horizon=horizon, num_channels=num_channels,
                                      target_indices=target_indices, **config)


def numpy_state(module: nn.Module) -> dict[str, np.ndarray]:
    """`module.state_dict()` as NumPy arrays (what `sfbench_jax.models.parity.load_state` takes)."""
    return {key: value.detach().cpu().numpy() for key, value in module.state_dict().items()}


def fixture_paths(root: Path = PARITY_ROOT) -> list[Path]:
    """The parity fixtures this module covers: every architecture above, without RevIN."""
    return sorted(path for path in root.glob("*.npz") if path.name.split("_")[0] in TORCH_MODELS)


def check_fixture(path: Path) -> float:
    """Load one parity fixture into a fresh module (`load_state_dict(strict=True)`), run its input in eval mode
    and return the scale-relative error `max|y - output| / max|output|` (parity README section 6)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    meta = json.loads(arrays["meta"].item())
    module = build_torch_model(FIXTURE_ARCHITECTURES[meta["architecture"]], meta["hyperparameters"],
                               input_len=int(meta["n"]), horizon=int(meta["H"]), num_channels=int(meta["m"]),
                               target_indices=meta["target_indices"], seed=1)
    state = {key.split("/", 1)[1]: torch.from_numpy(value) for key, value in arrays.items()
             if key.startswith(("param/", "buffer/"))}
    module.load_state_dict(state, strict=True)
    module.eval()
    with torch.no_grad():
        y = module(torch.from_numpy(arrays["input"])).numpy().astype(np.float64)
    reference = arrays["output"].astype(np.float64)
    return float(np.max(np.abs(y - reference)) / np.max(np.abs(reference)))
