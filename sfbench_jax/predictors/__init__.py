"""How the engine calls a model: a pure predict function or a row-aware predictor (`protocol`), and a model that
runs on the host, called once per block from inside the compiled program, with the checks of what it returns
(`host`). The bottom layer: only JAX below it; the models, methods and the evaluation engine build on it."""
