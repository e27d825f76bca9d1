"""The dataset registry: every benchmark dataset's channels, typing, targets, windows and batch size.

`DATASETS[key]` is the single source of truth for a dataset's contract (spec 1.1). Loading lives in
`loaders.py`, split arithmetic in `splits.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sfbench_jax.data.seeds import DatasetSeeds, data_config_signature, dataset_seeds

ETTH1_CHANNELS = ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT")
BEIJING_CHANNELS = ("PM2.5", "PM10", "SO2", "NO2", "CO", "O3", "TEMP", "PRES", "DEWP", "RAIN", "WSPM",
                    "wd")
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

#: Beijing's wind direction: 16 compass points, integer code clockwise from north (spec 1.2).
WIND_DIRECTIONS = ("N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W",
                   "WNW", "NW", "NNW")


@dataclass(frozen=True)
class DatasetSpec:
    """Contract of one benchmark dataset.

    Attributes:
        key: registry / CLI key (e.g. "etth1").
        reference_key: the key the reference implementation uses; it enters the data-config signature
            and therefore every derived seed.
        label: display label for tables and figures.
        source: how the runtime frame is obtained (a key of `loaders.SOURCES`).
        channels: input channel names; their order defines channel indices.
        discrete_channels: channels excluded from the continuous pool (never touched by channel-scoped
            faults).
        target_channels: forecast targets, or None when every channel is a target.
        horizon: forecast length H.
        batch_size: training batch size.
        expected_rows: row count of the reference runtime frame.
        content_sha256: accepted reference content checksums (spec 1.1).
        input_len: window length n.
        discrete_domains: (channel, allowed integer codes) pairs for the discrete channels.
    """

    key: str
    reference_key: str
    label: str
    source: str
    channels: tuple[str, ...]
    discrete_channels: tuple[str, ...]
    target_channels: tuple[str, ...] | None
    horizon: int
    batch_size: int
    expected_rows: int
    content_sha256: tuple[str, ...] = ()
    input_len: int = 96
    discrete_domains: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def num_channels(self) -> int:
        """Number of input channels m."""
        return len(self.channels)

    @property
    def target_indices(self) -> tuple[int, ...]:
        """Target channel positions in input order."""
        if self.target_channels is None:
            return tuple(range(self.num_channels))
        return tuple(self.channels.index(name) for name in self.target_channels)

    @property
    def continuous_pool(self) -> tuple[int, ...]:
        """Positions of the continuous channels (the fault channel pool P)."""
        return tuple(i for i, name in enumerate(self.channels) if name not in self.discrete_channels)

    @property
    def signature(self) -> str:
        """The data-config signature (spec 1.6)."""
        return data_config_signature(
            reference_key=self.reference_key, input_channels=self.channels,
            target_channels=self.target_channels, input_len=self.input_len, horizon=self.horizon)

    @property
    def seeds(self) -> DatasetSeeds:
        """Data and evaluation seeds derived from the signature."""
        return dataset_seeds(self.reference_key, self.signature)

    @property
    def is_synthetic(self) -> bool:
        """True for the shape-matched synthetic stand-ins."""
        return self.source.startswith("synthetic")


DATASETS: dict[str, DatasetSpec] = {
    spec.key: spec
    for spec in (
        DatasetSpec(
            key="beijing_air_tiantan", reference_key="BeijingAir_Tiantan", label="Beijing Air Tiantan",
            source="beijing_raw", channels=BEIJING_CHANNELS, discrete_channels=("wd",),
            target_channels=("PM2.5",), horizon=6, batch_size=64, expected_rows=24_038,
            content_sha256=("9ad18e546a4d43d868c71d0f1c2cfefc6f4de1bd6e35dfc54baa2aa4b2f86e65",),
            discrete_domains=(("wd", tuple(range(16))),)),
        DatasetSpec(
            key="penmanshiel_wt08", reference_key="Penmanshiel_Hourly_WT08", label="Penmanshiel WT08",
            source="penmanshiel_parquet", channels=PENMANSHIEL_CHANNELS, discrete_channels=(),
            target_channels=("Power (kW)",), horizon=6, batch_size=64, expected_rows=25_867,
            content_sha256=("a6df990227602898d4b1d24250572c80d2429b28767d785c4850474e57fd88a9",)),
        DatasetSpec(
            key="etth1", reference_key="ETTh1", label="ETTh1", source="etth1_packaged",
            channels=ETTH1_CHANNELS, discrete_channels=(), target_channels=None, horizon=96,
            batch_size=16, expected_rows=17_420,
            # The reference checksum, and the one pandas >= 3 gives for the same verbatim file (spec 1.1).
            content_sha256=("f6183ff793de4f47893e0edc709f8b94766b391ef3b36ccc51e3458655f3863f",
                            "47bf6a7f383b97d7c115d7cdab4fb4e29cf5d4cdd772a63bc35be3125a4baf1f")),
        DatasetSpec(
            key="traffic", reference_key="traffic", label="Traffic", source="traffic_csv",
            channels=TRAFFIC_CHANNELS, discrete_channels=(), target_channels=None, horizon=96,
            batch_size=16, expected_rows=17_544,
            content_sha256=("8a501d87ed1253976aaed03a9e44bd89a87cef922abc45edae8417f9e7b604ed",)),
        DatasetSpec(
            key="traffic_synthetic", reference_key="traffic_synthetic", label="Traffic (synthetic)",
            source="synthetic_traffic", channels=TRAFFIC_CHANNELS, discrete_channels=(),
            target_channels=None, horizon=96, batch_size=16, expected_rows=17_544),
        DatasetSpec(
            key="penmanshiel_synthetic", reference_key="penmanshiel_synthetic",
            label="Penmanshiel WT08 (synthetic)", source="synthetic_penmanshiel",
            channels=PENMANSHIEL_CHANNELS, discrete_channels=(), target_channels=("Power (kW)",),
            horizon=6, batch_size=64, expected_rows=25_867),
    )
}

#: Display order of the four benchmark datasets in tables and figures.
DISPLAY_ORDER = ("beijing_air_tiantan", "penmanshiel_wt08", "etth1", "traffic")


def get_dataset(key: str) -> DatasetSpec:
    """Look a dataset up by key; unknown keys raise a ValueError listing the valid ones."""
    try:
        return DATASETS[key]
    except KeyError:
        valid = ", ".join(sorted(DATASETS))
        raise ValueError(f"Unknown dataset {key!r}. Valid datasets: {valid}.") from None
