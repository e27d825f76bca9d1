"""Forecasting architectures (Flax NNX) and their registry."""
