"""Hydra entry points (a few lines each; no logic).

Every command here imports the registries, which load the installed plug-ins (`sfbench_jax.plugins`); a plug-in
that cannot be used stops the command at start. Its `PluginError` already names the entry point, its package and
the fix, so it is printed as that one line (exit status 1) instead of an import traceback;
`HYDRA_FULL_ERROR=1` keeps the traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType

from sfbench_jax.plugins.entry_points import PluginError

_previous_hook = sys.excepthook


def _plugin_errors_in_one_line(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    if isinstance(error, PluginError) and os.environ.get("HYDRA_FULL_ERROR") != "1":
        print(f"{Path(sys.argv[0]).name}: error: {error}", file=sys.stderr, flush=True)
        return
    _previous_hook(kind, error, trace)


sys.excepthook = _plugin_errors_in_one_line
