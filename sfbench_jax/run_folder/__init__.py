"""The run-folder format, in one place below the pipeline: what a run folder holds, its completion record
(`run_record.json`, every file's size and SHA-256, written last) and its verification, and a run's claim on its
folder (`record`). The pipeline writes and seals run folders with it; the analysis, the API and the MCP tools read
them back through it."""
