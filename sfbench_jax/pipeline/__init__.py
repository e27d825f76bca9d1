"""One run, from a checked configuration to a sealed run folder: the contracts of the specs a run uses, checked
by abstract evaluation before any work (`contracts`), one cell's select-then-evaluate path (`cell`), the files
one run writes (`outputs/`), `runner.run` (load, select, evaluate, write, seal), and the rebuild of a stored run's
winner without training (`rebuild`: severity curves, fault examples, selector pressure). Above the engine
(`train`, `evaluate`) and the run-folder format (`run_folder`); the analysis (`report`), the API, the MCP server
and the CLI call it."""
