"""End-to-end check of scripts/train_rul.py: table values agree with its saved checkpoint."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from phm_kernels import loaders, rul_model


def test_train_rul_script_writes_consistent_outputs(data_root, tmp_path, load_script):
    script = load_script("train_rul")
    status = script.main(["--data-root", str(data_root), "--out", str(tmp_path), "--subsets",
                          "FD001", "--architectures", "mlp", "--epochs", "2", "--quiet"])
    assert status == 0
    table = pd.read_csv(tmp_path / "results.csv")
    assert table.shape[0] == 1 and table.loc[0, "subset"] == "FD001"
    assert table.loc[0, "cap"] == 125.0 and not table.loc[0, "clip_truth"]
    markdown = (tmp_path / "results.md").read_text()
    assert "Published baselines" in markdown and "DCNN (Li et al. 2018)" in markdown
    # Recompute the reported RMSE from the saved checkpoint with plain NumPy.
    model = rul_model.load_rul_checkpoint(tmp_path / "checkpoints" / "FD001_mlp_seed0")
    data = loaders.load_cmapss(data_root, "FD001")
    pred = rul_model.predict_rul_last_cycle(model, data.test)
    rmse = float(np.sqrt(np.mean((pred - data.test_rul) ** 2)))
    assert table.loc[0, "rmse"] == pytest.approx(rmse, rel=1e-5)
