"""Published baseline-winner numbers of the paper (protocol 8.1 and 8.5, three decimals), for the
effective-robustness frontier when a run set lacks some architectures (Chronos-2 cannot run here) and for
comparisons in tests and docs. Nothing here is computed.
"""

from __future__ import annotations

#: Per dataset and architecture: MSE_c (Table 4) and mPC (Table 19), baseline winners, canonical realisation.
PUBLISHED_BASELINES: dict[str, dict[str, tuple[float, float]]] = {
    "beijing_air_tiantan": {"seasonal_naive": (0.353, 0.404), "dlinear": (0.329, 0.397), "gru": (0.281, 0.316),
                            "moderntcn": (0.301, 0.357), "tsmixer": (0.359, 0.383), "patchtst": (0.338, 0.392),
                            "chronos2": (0.349, 0.391)},
    "penmanshiel_wt08": {"seasonal_naive": (0.389, 0.431), "dlinear": (0.340, 0.374), "gru": (0.346, 0.355),
                         "moderntcn": (0.336, 0.360), "tsmixer": (0.353, 0.386), "patchtst": (0.354, 0.390),
                         "chronos2": (0.401, 0.422)},
    "etth1": {"seasonal_naive": (0.634, 0.728), "dlinear": (0.438, 0.490), "gru": (0.664, 0.679),
              "moderntcn": (0.462, 0.514), "tsmixer": (0.475, 0.519), "patchtst": (0.431, 0.501),
              "chronos2": (0.496, 0.580)},
    "traffic": {"seasonal_naive": (1.270, 1.381), "dlinear": (0.684, 0.740), "gru": (0.726, 0.778),
                "moderntcn": (0.575, 0.639), "tsmixer": (0.631, 0.702), "patchtst": (0.453, 0.587),
                "chronos2": (0.602, 0.778)},
}

#: SeasonalNaive's published Table 19 column (D_w, D-bar, mPC, mCE, relative mCE, rho-bar).
PUBLISHED_SEASONAL_NAIVE_TABLE19: dict[str, dict[str, float]] = {
    "beijing_air_tiantan": {"D_w": 1.353, "D_mean": 1.145, "mPC": 0.404, "mCE": 1.000, "rel_mCE": 1.000,
                            "rho": -0.005},
    "penmanshiel_wt08": {"D_w": 1.320, "D_mean": 1.107, "mPC": 0.431, "mCE": 1.000, "rel_mCE": 1.000,
                         "rho": -0.011},
    "etth1": {"D_w": 1.288, "D_mean": 1.148, "mPC": 0.728, "mCE": 1.000, "rel_mCE": 1.000, "rho": -0.040},
    "traffic": {"D_w": 1.210, "D_mean": 1.087, "mPC": 1.381, "mCE": 1.000, "rel_mCE": 1.000, "rho": -0.062},
}
