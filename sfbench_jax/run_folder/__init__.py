"""The run-folder format, in one place below the pipeline: a run's completion record (`run_record.json`, every
file's size and SHA-256, written last), its verification and a run's claim on its folder (`record`); the files a
run folder holds, sealing it, reading it back verified, run keys and finding runs (`stored_runs`). The pipeline
writes and seals run folders with it; the analysis, the API and the MCP tools read them back through it."""
