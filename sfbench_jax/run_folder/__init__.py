"""The run-folder format, in one place below the pipeline, one module per concern: the file names (`names`), what a
damaged folder is (`damage`), a run's key (`keys`), its manifest (`manifest`), its summary checked against its own
losses (`summary`), the completion record and the seal that writes it last (`record`), the writer lock (`locks`), a
run's claim on its folder (`claim`), finding run folders (`finding`) and loading them verified (`loading`). The
pipeline writes and seals run folders with it; the analysis, the API and the MCP tools read them back through it."""
