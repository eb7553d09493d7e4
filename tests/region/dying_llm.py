"""A stand-in for vLLM's HTTP surface, for tests about the LLM process dying rather than the model.

``DyingLlm`` runs a real HTTP server in its own process on loopback, speaking what the region reads
of vLLM's OpenAI API: ``GET /v1/models`` and a streamed ``POST /v1/chat/completions`` (server-sent
events, chunked, as vLLM sends them) that sends ``chunks`` words, then holds the answer open as a
model still writing (an answer of at most ``chunks`` tokens, the region's warm-up, ends).
``kill()`` SIGKILLs it mid-answer: the kernel closes its sockets exactly as it does for a SIGKILLed
vLLM, which is what the region sees of that death. The real vLLM's death is
the ``llm-crash`` drill's (tests/drills/test_llm_crash_drill.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

_SERVER = r"""
import http.server, json, sys, time
port, name, chunks = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": name, "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        limit = body.get("max_tokens") or 10**6
        for i in range(min(chunks, limit)):
            event = {"choices": [{"index": 0, "delta": {"content": f" word{i}"}}]}
            self._chunk(f"data: {json.dumps(event)}\n\n".encode())
        if limit <= chunks:  # a short answer (the region's warm-up) ends
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
            return
        time.sleep(3600)  # a model still writing: only a kill ends this answer

    def _chunk(self, data):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


class DyingLlm:
    def __init__(self, tmp_path: Path, port: int, *, name: str = "stand-in", chunks: int = 3) -> None:
        self.script = tmp_path / "dying_llm_server.py"
        self.script.write_text(_SERVER)
        self.port = port
        self.name = name
        self.chunks = chunks
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 30.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(self.script), str(self.port), self.name, str(self.chunks)],
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"the stand-in LLM on port {self.port} did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
