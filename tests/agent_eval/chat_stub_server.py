"""A chat-completions server process for the harness-error tests: it answers, stalls, fails or dies on cue.

Run as its own process (``python chat_stub_server.py --port P ...``, e.g. through ``sfbench-agent-eval local
--server-command``), so a test can watch a real server process die by a real signal. ``GET /v1/models``
always answers; the N-th ``POST /v1/chat/completions`` (counted from 1, the health check included) is:

* ``--die-on N --signal SIGILL``: the process kills itself with that signal before answering (a server that
  dies mid-request, as llama.cpp built with -march=native does on a CPU without AMX);
* ``--stall-from N --stall-s S``: answered after sleeping S seconds (a stalled request);
* ``--status-from N --status 503``: answered with that HTTP status;
* otherwise a final answer, ``{"answer": 0}``.
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _handler(args: argparse.Namespace) -> type[BaseHTTPRequestHandler]:
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            count[0] += 1
            n = count[0]
            if args.die_on and n >= args.die_on:
                # raised in this thread, so it lands before the next line: os.kill(getpid()) may be taken by
                # another thread, and under load this one then answered before the process died
                signal.raise_signal(signal.Signals[args.signal])
                time.sleep(3600)  # never answer, whatever the signal's action
            if args.stall_from and n >= args.stall_from:
                time.sleep(args.stall_s)
            if args.status_from and n >= args.status_from:
                self._send(args.status, {"error": {"message": f"stub status {args.status}"}})
                return
            self._send(200, {"id": f"stub-{n}", "object": "chat.completion", "model": "stub",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": '{"answer": 0}'}}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--die-on", type=int, default=0)
    parser.add_argument("--signal", default="SIGILL")
    parser.add_argument("--stall-from", type=int, default=0)
    parser.add_argument("--stall-s", type=float, default=0.0)
    parser.add_argument("--status-from", type=int, default=0)
    parser.add_argument("--status", type=int, default=503)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _handler(args))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
