"""PHM kernels."""
