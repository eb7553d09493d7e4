"""A stand-in for the vLLM runtime, for tests about process handling rather than the LLM.

``stand_in_llm(tmp_path)`` gives LlmSettings whose "vLLM" is a ``vllm.entrypoints.openai.api_server``
module on PYTHONPATH that serves ``/health`` with the standard library and prints vLLM's start-up
milestone line (``--fail`` in ``vllm_args`` makes it exit with code 7 at once). It answers nothing
else, so a region attached to it waits for its LLM forever. The real vLLM is exercised by every
test that uses the ``llm_url`` fixture.
"""

from __future__ import annotations

import sys
from pathlib import Path

from region.settings import LlmSettings

_FAKE_API_SERVER = """
import argparse, http.server, sys
parser = argparse.ArgumentParser()
parser.add_argument("--host"); parser.add_argument("--port", type=int)
args, _ = parser.parse_known_args()
if "--fail" in sys.argv:
    print("RuntimeError: not enough memory for the KV cache", flush=True)
    sys.exit(7)

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass

server = http.server.HTTPServer((args.host, args.port), Health)
print("INFO 01-01 00:00:00 [api_server.py:1] Starting vLLM API server on " + str(args.port), flush=True)
server.serve_forever()
"""


def stand_in_llm(tmp_path: Path, *extra: str) -> LlmSettings:
    pkg = tmp_path / "site" / "vllm" / "entrypoints" / "openai"
    pkg.mkdir(parents=True)
    for d in (pkg, pkg.parent, pkg.parent.parent):
        (d / "__init__.py").write_text("")
    (pkg / "api_server.py").write_text(_FAKE_API_SERVER)
    return LlmSettings(
        model="stand-in",
        served_name="stand-in",
        runtime_python=sys.executable,
        vllm_args=extra,
        vllm_env={"PYTHONPATH": str(tmp_path / "site")},
        ready_timeout_s=120,
    )
