"""Hydra entry points (a few lines each; no logic)."""
