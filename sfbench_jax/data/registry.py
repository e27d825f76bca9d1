"""The dataset registry: the built-in datasets' specs (loader, channels, typing, targets, windows, batch size): the
paper's four and their synthetic stand-ins here, then each further dataset added inside this repository as `SPEC` in
its own module of this package (collected by `plugins.package_specs`, by name; no list to edit), then the plug-in
datasets that installed packages register (entry-point group `sfbench_jax.datasets`).

`DATASETS[key]` is the single source of truth for a dataset's contract (protocol 1.1; the type is `spec.DatasetSpec`).
Built-in loading lives in `sources.py`, validation in `loaders.py`, split arithmetic in `splits.py`.
"""

from __future__ import annotations

from sfbench_jax.data import sources
from sfbench_jax.data.beijing import BEIJING_CHANNELS, WIND_DIRECTIONS
from sfbench_jax.data.spec import DatasetSpec
from sfbench_jax.plugins.entry_points import discovered, package_specs, register_specs, unknown_name_error

__all__ = ["BEIJING_CHANNELS", "DATASETS", "DISPLAY_ORDER", "WIND_DIRECTIONS", "DatasetSpec", "get_dataset"]

ETTH1_CHANNELS = ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT")
TRAFFIC_CHANNELS = tuple(str(i) for i in range(861)) + ("OT",)
PENMANSHIEL_CHANNELS = (
    "Wind speed (m/s)", "Wind speed, Standard deviation (m/s)", "Wind speed, Minimum (m/s)",
    "Wind speed, Maximum (m/s)", "Long Term Wind (m/s)", "Wind speed Sensor 1 (m/s)",
    "Wind speed Sensor 1, Standard deviation (m/s)", "Wind speed Sensor 1, Minimum (m/s)",
    "Wind speed Sensor 1, Maximum (m/s)", "Wind speed Sensor 2 (m/s)",
    "Wind speed Sensor 2, Standard deviation (m/s)", "Wind speed Sensor 2, Minimum (m/s)",
    "Wind speed Sensor 2, Maximum (m/s)", "Wind direction (°)", "Nacelle position (°)",
    "Wind direction, Standard deviation (°)", "Wind direction, Minimum (°)",
    "Wind direction, Maximum (°)", "Nacelle position, Standard deviation (°)",
    "Nacelle position, Minimum (°)", "Nacelle position, Maximum (°)", "Power (kW)",
    "Power factor (cosphi)", "Power factor (cosphi), Max", "Power factor (cosphi), Min",
    "Power factor (cosphi), Standard deviation", "Reactive power (kvar)",
    "Reactive power, Max (kvar)", "Reactive power, Min (kvar)",
    "Reactive power, Standard deviation (kvar)", "Stator temperature 1 (°C)",
    "Generator bearing rear temperature (°C)", "Generator bearing front temperature (°C)",
    "Temp. top box (°C)", "Hub temperature (°C)", "Ambient temperature (converter) (°C)",
    "Rotor bearing temp (°C)", "Temperature motor axis 1 (°C)", "Temperature motor axis 2 (°C)",
    "Temperature motor axis 3 (°C)", "CPU temperature (°C)",
    "Generator bearing front temperature, Max (°C)", "Generator bearing front temperature, Min (°C)",
    "Generator bearing rear temperature, Max (°C)", "Generator bearing rear temperature, Min (°C)",
    "Grid voltage (V)", "Grid voltage, Max (V)", "Grid voltage, Min (V)",
    "Grid voltage, Standard deviation (V)", "Grid current (A)", "Motor current axis 1 (A)",
    "Motor current axis 2 (A)", "Motor current axis 3 (A)", "Rotor speed (RPM)",
    "Generator RPM (RPM)", "Generator RPM, Max (RPM)", "Generator RPM, Min (RPM)",
    "Generator RPM, Standard deviation (RPM)", "Rotor speed, Max (RPM)", "Rotor speed, Min (RPM)",
    "Rotor speed, Standard deviation (RPM)", "Gear oil inlet pressure (bar)",
    "Gear oil pump pressure (bar)", "Grid frequency (Hz)", "Drive train acceleration (mm/ss)",
)

DATASETS: dict[str, DatasetSpec] = {
    spec.key: spec
    for spec in (
        DatasetSpec(
            key="beijing_air_tiantan", reference_key="BeijingAir_Tiantan", label="Beijing Air Tiantan",
            loader=sources.load_beijing, channels=BEIJING_CHANNELS, discrete_channels=("wd",),
            target_channels=("PM2.5",), horizon=6, batch_size=64, expected_rows=24_038,
            content_sha256=("9ad18e546a4d43d868c71d0f1c2cfefc6f4de1bd6e35dfc54baa2aa4b2f86e65",),
            discrete_domains=(("wd", tuple(range(16))),)),
        DatasetSpec(
            key="penmanshiel_wt08", reference_key="Penmanshiel_Hourly_WT08", label="Penmanshiel WT08",
            loader=sources.load_penmanshiel, channels=PENMANSHIEL_CHANNELS, discrete_channels=(),
            target_channels=("Power (kW)",), horizon=6, batch_size=64, expected_rows=25_867,
            content_sha256=("a6df990227602898d4b1d24250572c80d2429b28767d785c4850474e57fd88a9",)),
        DatasetSpec(
            key="etth1", reference_key="ETTh1", label="ETTh1", loader=sources.load_etth1,
            channels=ETTH1_CHANNELS, discrete_channels=(), target_channels=None, horizon=96,
            batch_size=16, expected_rows=17_420,
            # The reference checksum, and the one pandas >= 3 gives for the same verbatim file (protocol 1.1).
            content_sha256=("f6183ff793de4f47893e0edc709f8b94766b391ef3b36ccc51e3458655f3863f",
                            "47bf6a7f383b97d7c115d7cdab4fb4e29cf5d4cdd772a63bc35be3125a4baf1f")),
        DatasetSpec(
            key="traffic", reference_key="traffic", label="Traffic", loader=sources.load_traffic,
            channels=TRAFFIC_CHANNELS, discrete_channels=(), target_channels=None, horizon=96,
            batch_size=16, expected_rows=17_544,
            content_sha256=("8a501d87ed1253976aaed03a9e44bd89a87cef922abc45edae8417f9e7b604ed",)),
        DatasetSpec(
            key="traffic_synthetic", reference_key="traffic_synthetic", label="Traffic (synthetic)",
            loader=sources.load_synthetic, synthetic=True, channels=TRAFFIC_CHANNELS, discrete_channels=(),
            target_channels=None, horizon=96, batch_size=16, expected_rows=17_544),
        DatasetSpec(
            key="penmanshiel_synthetic", reference_key="penmanshiel_synthetic",
            label="Penmanshiel WT08 (synthetic)", loader=sources.load_synthetic, synthetic=True,
            channels=PENMANSHIEL_CHANNELS, discrete_channels=(), target_channels=("Power (kW)",),
            horizon=6, batch_size=64, expected_rows=25_867),
    )
}
#: The datasets of this package's own modules (each module that binds a `DatasetSpec` `SPEC`), by key.
PACKAGE_DATASETS: tuple[DatasetSpec, ...] = package_specs("sfbench_jax.data", DatasetSpec)
register_specs(DATASETS, PACKAGE_DATASETS, kind="datasets")
register_specs(DATASETS, discovered("datasets", DatasetSpec), kind="datasets")

#: Display order in tables and figures: the four benchmark datasets, those of this package's modules (by key), then
#: the plug-in datasets (by entry-point name).
DISPLAY_ORDER = ("beijing_air_tiantan", "penmanshiel_wt08", "etth1", "traffic",
                 *(spec.key for spec in PACKAGE_DATASETS), *(spec.key for spec in discovered("datasets", DatasetSpec)))


def get_dataset(key: str) -> DatasetSpec:
    """Look a dataset up by key; unknown keys raise a ValueError listing the valid ones."""
    try:
        return DATASETS[key]
    except KeyError:
        import difflib

        valid = ", ".join(sorted(DATASETS))
        close = difflib.get_close_matches(str(key), sorted(DATASETS), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise unknown_name_error("datasets", key, f"Unknown dataset {key!r}.{hint} Valid datasets: {valid}.") from None
