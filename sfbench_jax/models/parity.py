"""Import PyTorch SensorFault-Bench weights into the Flax NNX architectures.

What lives here: one loader per architecture (`load_dlinear`, `load_gru`, `load_moderntcn`,
`load_patchtst`, `load_tsmixer`, `load_revin`, `load_seasonal_naive`, and `load_state`, which
dispatches on the module's class) that copies a reference `state_dict` (names and layouts exactly
as `torch.nn.Module.state_dict()` gives them, as NumPy arrays) into an already constructed module;
the parity-fixture reader `read_fixture`; `model_from_fixture`, which builds the module a fixture
describes through the registry and loads its weights; and the README's `parity_error`. Layout
conversions follow `../shared/parity/README.md` sections 3 and 4. Nothing here needs PyTorch.

Loading is strict, like `load_state_dict(strict=True)`: a missing key, an unexpected key or a
shape mismatch raises `ValueError` naming it, and nothing is written. BatchNorm
`num_batches_tracked` buffers are accepted and ignored (they enter neither mode's computation).

Example (with `torch_model` a reference `models.GRU`, converted once on the PyTorch side)::

    state = {k: v.detach().numpy() for k, v in torch_model.state_dict().items()}
    model = build_model("gru", {"d_hidden": 64, "n_layers": 2, "dropout": 0.1},
                        input_len=96, horizon=6, num_channels=12, target_indices=[0], seed=0)
    load_gru(model, state)
    model.eval()
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from flax import nnx

from sfbench_jax.models.dlinear import DLinear
from sfbench_jax.models.gru import GRU
from sfbench_jax.models.layers import TorchBatchNorm
from sfbench_jax.models.moderntcn import ModernTCN
from sfbench_jax.models.patchtst import PatchTST
from sfbench_jax.models.revin import RevIN, RevINConfig
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.models.tsmixer import TSMixer

StateDict = Mapping[str, np.ndarray]
_Transform = Callable[[np.ndarray], np.ndarray]

ARCHITECTURE_NAMES: dict[str, str] = {
    "DLinear": "dlinear", "GRU": "gru", "ModernTCN": "moderntcn", "PatchTST": "patchtst",
    "TSMixer": "tsmixer", "SeasonalNaive": "seasonal_naive",
}
"""Reference class name -> registry name."""


class _Loader:
    """Collects `variable <- f(torch arrays)` assignments, checks keys and shapes, applies them."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.expected: dict[str, tuple[int, ...]] = {}
        self.ignored: set[str] = set()
        self.assignments: list[tuple[nnx.Variable[jax.Array], tuple[str, ...], Callable[..., np.ndarray]]] = []

    def add(self, key: str, variable: nnx.Variable[jax.Array], torch_shape: Sequence[int],
            transform: _Transform = lambda w: w) -> None:
        """Assign `transform(state[key])` to `variable`."""
        self.expected[key] = tuple(int(s) for s in torch_shape)
        self.assignments.append((variable, (key,), transform))

    def add_stacked(self, keys: Sequence[str], variable: nnx.Variable[jax.Array],
                    torch_shape: Sequence[int], transform: _Transform = lambda w: w) -> None:
        """Assign `stack([transform(state[k]) for k in keys])` (one torch layer per channel)."""
        for key in keys:
            self.expected[key] = tuple(int(s) for s in torch_shape)
        self.assignments.append(
            (variable, tuple(keys), lambda *ws: np.stack([transform(w) for w in ws])))

    def linear(self, prefix: str, layer: nnx.Linear) -> None:
        """`nn.Linear`: `weight (out, in)` -> `kernel (in, out)`."""
        in_features, out_features = layer.kernel[...].shape
        assert layer.bias is not None  # the reference's layers all have a bias
        self.add(f"{prefix}.weight", layer.kernel, (out_features, in_features), _transpose)
        self.add(f"{prefix}.bias", layer.bias, (out_features,))

    def pointwise_conv(self, prefix: str, layer: nnx.Linear) -> None:
        """`Conv1d(k=1)` used as a Dense: `weight (out, in, 1)` -> `kernel (in, out)`."""
        in_features, out_features = layer.kernel[...].shape
        assert layer.bias is not None  # the reference's layers all have a bias
        self.add(f"{prefix}.weight", layer.kernel, (out_features, in_features, 1),
                 lambda w: w[:, :, 0].T)
        self.add(f"{prefix}.bias", layer.bias, (out_features,))

    def batch_norm(self, prefix: str, norm: TorchBatchNorm) -> None:
        """`nn.BatchNorm1d(C)`: flat `(C,)` vectors reshaped to the module's feature shape."""
        size = int(np.prod(norm.feature_shape))

        def reshape(w: np.ndarray) -> np.ndarray:
            return w.reshape(norm.feature_shape)

        self.add(f"{prefix}.weight", norm.scale, (size,), reshape)
        self.add(f"{prefix}.bias", norm.bias, (size,), reshape)
        self.add(f"{prefix}.running_mean", norm.mean, (size,), reshape)
        self.add(f"{prefix}.running_var", norm.var, (size,), reshape)
        self.ignored.add(f"{prefix}.num_batches_tracked")

    def apply(self, state: StateDict) -> None:
        """Check the key set and every shape, then assign (nothing is written on error)."""
        provided = set(state)
        missing = sorted(set(self.expected) - provided)
        unexpected = sorted(provided - set(self.expected) - self.ignored)
        if missing or unexpected:
            raise ValueError(f"{self.model_name} state_dict does not match the module: "
                             f"missing keys {missing}, unexpected keys {unexpected}.")
        for key, shape in self.expected.items():
            if tuple(np.shape(state[key])) != shape:
                raise ValueError(f"{self.model_name}: {key} has shape {np.shape(state[key])}, "
                                 f"expected {shape}.")
        values = []
        for variable, keys, transform in self.assignments:
            value = np.asarray(transform(*(np.asarray(state[k], np.float32) for k in keys)),
                               np.float32)
            if value.shape != variable[...].shape:
                raise AssertionError(f"layout error for {keys}: {value.shape} vs "
                                     f"{variable[...].shape}")
            values.append(value)
        for (variable, _, _), value in zip(self.assignments, values, strict=True):
            variable[...] = jnp.asarray(value)


def _transpose(w: np.ndarray) -> np.ndarray:
    return w.T


def _grouped_bias(groups: int) -> _Transform:
    """Grouped bias `(G·out,)` -> `(G, out)`."""
    def transform(w: np.ndarray) -> np.ndarray:
        return w.reshape(groups, -1)
    return transform


def _grouped_pointwise(groups: int) -> _Transform:
    """Grouped 1×1 Conv1d `(G·out, in, 1)` -> kernel `(G, in, out)` (contiguous groups)."""
    def transform(w: np.ndarray) -> np.ndarray:
        return w[:, :, 0].reshape(groups, -1, w.shape[1]).transpose(0, 2, 1)
    return transform


def _flat_head(d_model: int, patches: int) -> _Transform:
    """Head Linear `(H, d·P)` with d_model-major flatten -> kernel `(d, P, H)`."""
    def transform(w: np.ndarray) -> np.ndarray:
        return w.reshape(w.shape[0], d_model, patches).transpose(1, 2, 0)
    return transform


def _dlinear_entries(model: DLinear, loader: _Loader, prefix: str = "") -> None:
    shape = (model.horizon, model.input_len)
    parts = (("Linear_Seasonal", model.seasonal_kernel, model.seasonal_bias),
             ("Linear_Trend", model.trend_kernel, model.trend_bias))
    for part, kernel, bias in parts:
        if model.config.individual:
            channels = range(model.num_channels)
            loader.add_stacked([f"{prefix}{part}.{c}.weight" for c in channels], kernel, shape,
                               _transpose)
            loader.add_stacked([f"{prefix}{part}.{c}.bias" for c in channels], bias,
                               (model.horizon,))
        else:
            loader.add(f"{prefix}{part}.weight", kernel, shape, _transpose)
            loader.add(f"{prefix}{part}.bias", bias, (model.horizon,))


def _gru_entries(model: GRU, loader: _Loader, prefix: str = "") -> None:
    d = model.config.d_hidden
    for k, layer in enumerate(model.layers):
        in_features = layer.input_kernel[...].shape[0]
        loader.add(f"{prefix}gru.weight_ih_l{k}", layer.input_kernel, (3 * d, in_features),
                   _transpose)
        loader.add(f"{prefix}gru.weight_hh_l{k}", layer.hidden_kernel, (3 * d, d), _transpose)
        loader.add(f"{prefix}gru.bias_ih_l{k}", layer.input_bias, (3 * d,))
        loader.add(f"{prefix}gru.bias_hh_l{k}", layer.hidden_bias, (3 * d,))
    loader.linear(f"{prefix}fc", model.head)


def _moderntcn_entries(model: ModernTCN, loader: _Loader, prefix: str = "") -> None:
    cfg, m = model.config, model.num_channels
    d, r = cfg.d_model, cfg.ffn_ratio
    loader.add(f"{prefix}stem.0.weight", model.stem_kernel, (d, 1, cfg.patch_size),
               lambda w: w[:, 0, :].T)
    loader.add(f"{prefix}stem.0.bias", model.stem_bias, (d,))
    loader.batch_norm(f"{prefix}stem.1", model.stem_norm)
    for i, block in enumerate(model.blocks):
        p = f"{prefix}blocks.{i}."
        loader.add(p + "temporal_conv.large_branch.0.weight", block.large_kernel,
                   (m * d, 1, cfg.large_size))
        loader.batch_norm(p + "temporal_conv.large_branch.1", block.large_norm)
        loader.add(p + "temporal_conv.small_branch.0.weight", block.small_kernel,
                   (m * d, 1, cfg.small_size))
        loader.batch_norm(p + "temporal_conv.small_branch.1", block.small_norm)
        loader.batch_norm(p + "temporal_norm", block.temporal_norm)
        for name, layer, groups, out, inp in (
                ("ffn_features_in", block.features_in, m, d * r, d),
                ("ffn_features_out", block.features_out, m, d, d * r),
                ("ffn_variables_in", block.variables_in, d, m * r, m),
                ("ffn_variables_out", block.variables_out, d, m, m * r)):
            loader.add(p + name + ".weight", layer.kernel, (groups * out, inp, 1),
                       _grouped_pointwise(groups))
            loader.add(p + name + ".bias", layer.bias, (groups * out,),
                       _grouped_bias(groups))
    loader.add(f"{prefix}forecast_head.linear.weight", model.head_kernel,
               (model.horizon, d * model.patch_count), _flat_head(d, model.patch_count))
    loader.add(f"{prefix}forecast_head.linear.bias", model.head_bias, (model.horizon,))


def _patchtst_entries(model: PatchTST, loader: _Loader, prefix: str = "") -> None:
    cfg = model.config
    loader.linear(f"{prefix}patch_embedding.value_embedding", model.embedding)
    loader.add(f"{prefix}patch_embedding.W_pos", model.position,
               (model.patch_count, cfg.d_model))
    for i, layer in enumerate(model.layers):
        p = f"{prefix}encoder.attn_layers.{i}."
        loader.linear(p + "attention.query_projection", layer.query)
        loader.linear(p + "attention.key_projection", layer.key)
        loader.linear(p + "attention.value_projection", layer.value)
        loader.linear(p + "attention.out_projection", layer.out)
        loader.pointwise_conv(p + "conv1", layer.ff_in)
        loader.pointwise_conv(p + "conv2", layer.ff_out)
        loader.batch_norm(p + "norm1.1", layer.norm_attention)
        loader.batch_norm(p + "norm2.1", layer.norm_ff)
    loader.add(f"{prefix}flatten_head.linear.weight", model.head_kernel,
               (model.horizon, cfg.d_model * model.patch_count),
               _flat_head(cfg.d_model, model.patch_count))
    loader.add(f"{prefix}flatten_head.linear.bias", model.head_bias, (model.horizon,))


def _tsmixer_entries(model: TSMixer, loader: _Loader, prefix: str = "") -> None:
    slab = (model.input_len, model.num_channels)
    for i, block in enumerate(model.blocks):
        p = f"{prefix}mixer_blocks.{i}."
        for name, norm in (("temporal_norm", block.temporal_norm),
                           ("feature_norm", block.feature_norm)):
            if isinstance(norm, TorchBatchNorm):
                loader.batch_norm(p + name + ".norm", norm)
            else:
                loader.add(p + name + ".weight", norm.scale, slab)
                loader.add(p + name + ".bias", norm.bias, slab)
        loader.linear(p + "temporal_mixing", block.temporal)
        loader.linear(p + "feature_fc1", block.feature_in)
        loader.linear(p + "feature_fc2", block.feature_out)
    loader.linear(f"{prefix}temporal_projection", model.projection)


_ENTRIES: dict[type, Callable[..., None]] = {
    DLinear: _dlinear_entries, GRU: _gru_entries, ModernTCN: _moderntcn_entries,
    PatchTST: _patchtst_entries, TSMixer: _tsmixer_entries,
}


def _load(model: nnx.Module, cls: type, state: StateDict) -> None:
    if not isinstance(model, cls):
        raise TypeError(f"expected a {cls.__name__} module, got {type(model).__name__}.")
    loader = _Loader(cls.__name__)
    _ENTRIES[cls](model, loader)
    loader.apply(state)


def load_dlinear(model: DLinear, state: StateDict) -> None:
    """Load a reference `models.DLinear` state_dict into `model` (in place).

    `Linear_Seasonal`/`Linear_Trend` weights `(H, n)` become kernels `(n, H)`; with
    `individual=true` the per-channel layers `Linear_*.{c}` are stacked along a leading axis.
    """
    _load(model, DLinear, state)


def load_gru(model: GRU, state: StateDict) -> None:
    """Load a reference `models.GRU` state_dict (`gru.*_l{k}` in r, z, n order, `fc.*`)."""
    _load(model, GRU, state)


def load_moderntcn(model: ModernTCN, state: StateDict) -> None:
    """Load a reference `models.ModernTCN` state_dict (`stem.*`, `blocks.{i}.*`, head)."""
    _load(model, ModernTCN, state)


def load_patchtst(model: PatchTST, state: StateDict) -> None:
    """Load a reference `models.PatchTST` state_dict (embedding, encoder layers, head)."""
    _load(model, PatchTST, state)


def load_tsmixer(model: TSMixer, state: StateDict) -> None:
    """Load a reference `models.TSMixer` state_dict (`mixer_blocks.{i}.*`, projection)."""
    _load(model, TSMixer, state)


def load_revin(model: RevIN, state: StateDict) -> None:
    """Load a RevIN-wrapped reference state_dict: `revin.affine_*` plus the base model's keys."""
    if not isinstance(model, RevIN):
        raise TypeError(f"expected a RevIN module, got {type(model).__name__}.")
    base_cls = type(model.base)
    if base_cls not in _ENTRIES:
        raise TypeError(f"RevIN wraps an unsupported module {base_cls.__name__}.")
    loader = _Loader(f"RevIN({base_cls.__name__})")
    if model.config.affine:
        loader.add("revin.affine_weight", model.affine_weight, (model.num_channels,))
        loader.add("revin.affine_bias", model.affine_bias, (model.num_channels,))
    _ENTRIES[base_cls](model.base, loader)
    loader.apply(state)


def load_seasonal_naive(model: SeasonalNaive, state: StateDict) -> None:
    """Check a reference `models.SeasonalNaive` state_dict: only `_dummy_param`, which is unused."""
    if not isinstance(model, SeasonalNaive):
        raise TypeError(f"expected a SeasonalNaive module, got {type(model).__name__}.")
    unexpected = sorted(set(state) - {"_dummy_param"})
    if unexpected:
        raise ValueError(f"SeasonalNaive state_dict has unexpected keys {unexpected}.")


def load_state(model: nnx.Module, state: StateDict) -> None:
    """Dispatch to the loader matching `model`'s class (RevIN-wrapped models included)."""
    if isinstance(model, RevIN):
        load_revin(model, state)
    elif isinstance(model, SeasonalNaive):
        load_seasonal_naive(model, state)
    elif type(model) in _ENTRIES:
        _load(model, type(model), state)
    else:
        raise TypeError(f"no PyTorch loader for {type(model).__name__}.")


# --------------------------------------------------------------------------------------------
# Fixtures


@dataclasses.dataclass(frozen=True)
class Fixture:
    """One parity fixture (`../shared/parity/*.npz`), see the README there.

    Attributes:
        name: file stem, e.g. `gru_m12h6_ar_l2_h64`.
        meta: decoded `meta` JSON.
        state: `param/*` and `buffer/*` arrays under their torch `state_dict` names.
        input: `(4, 96, m)` float32 batch.
        output: reference eval-mode output `(4, H, n_targets)`.
        intermediates: `inter/*` arrays (window 0 only) without the prefix.
    """

    name: str
    meta: dict[str, Any]  # the fixture's metadata, parsed JSON
    state: dict[str, np.ndarray]
    input: np.ndarray
    output: np.ndarray
    intermediates: dict[str, np.ndarray]


def read_fixture(path: str | Path) -> Fixture:
    """Read one parity `.npz` file (no pickles)."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    state = {}
    for key, value in arrays.items():
        for prefix in ("param/", "buffer/"):
            if key.startswith(prefix):
                state[key[len(prefix):]] = value
    intermediates = {k[len("inter/"):]: v for k, v in arrays.items() if k.startswith("inter/")}
    return Fixture(name=path.stem, meta=json.loads(arrays["meta"].item()), state=state,
                   input=arrays["input"], output=arrays["output"], intermediates=intermediates)


def model_from_fixture(fixture: Fixture, *, seed: int = 0) -> nnx.Module:
    """Build the module a fixture describes (via the registry), load its weights, set eval mode.

    Args:
        fixture: a fixture from `read_fixture`.
        seed: initialisation seed (every parameter is overwritten by the fixture's).

    Returns:
        The module in eval mode, ready to be compared with `fixture.output`.
    """
    from sfbench_jax.models.registry import build_model  # registry imports this module's peers

    meta = fixture.meta
    name = ARCHITECTURE_NAMES.get(meta["architecture"])
    if name is None:
        raise ValueError(f"unknown reference architecture {meta['architecture']!r}; known: "
                         f"{sorted(ARCHITECTURE_NAMES)}.")
    revin = None
    if meta.get("revin"):
        revin = RevINConfig(affine=bool(meta["revin"]["affine"]),
                            eps=float(meta["revin"]["eps"]))
    model = build_model(name, meta["hyperparameters"], input_len=int(meta["n"]),
                        horizon=int(meta["H"]), num_channels=int(meta["m"]),
                        target_indices=meta["target_indices"], seed=seed, revin=revin)
    load_state(model, fixture.state)
    model.eval()
    return model


def parity_error(prediction: npt.ArrayLike, reference: npt.ArrayLike) -> float:
    """Scale-relative error `max|y − ref| / max|ref|` (parity README section 6), in float64."""
    y = np.asarray(prediction, np.float64)
    ref = np.asarray(reference, np.float64)
    if y.shape != ref.shape:
        raise ValueError(f"shape mismatch: {y.shape} vs {ref.shape}.")
    return float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))
