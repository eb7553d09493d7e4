"""HTTP requests to fuzz an edge with (methods, paths, query strings, headers, bodies), and one
case run against a running edge: anything under 500, within the case's timeout."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import strategies as st

from voicemesh.fuzz.events import json_values
from voicemesh.fuzz.oracle import Hang, ServerFault, check_http_status
from voicemesh.fuzz.target import EdgeTarget

ENDPOINTS = [
    "/", "/health", "/status", "/metrics", "/ops", "/web/talk.js", "/v1/models", "/v1/realtime",
    "/v1/realtime/client_secrets", "/v1/realtime/calls", "/v1/realtime/calls/x/hangup",
    "/v1/audio/speech", "/v1/audio/transcriptions", "/v1/voices", "/v1/voices/x",
    "/v1/speech/batches", "/v1/speech/batches/x", "/v1/speech/batches/x/cancel",
    "/v1/speech/batches/x/items/0/content", "/v1/speech/batches/x/items/-1/content",
    "/v1/keys", "/v1/keys/x", "/v1/keys/x/usage", "/v1/twilio/voice",
]  # fmt: skip
"""The edge's routes (each with placeholder ids), the ones a fuzzed path most often misses."""

METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "TRACE", "FUZZ"]

Request = tuple[str, str, dict[str, str], bytes]
"""(method, path with its query string, headers, body)."""


def header_tokens(api_key: str) -> st.SearchStrategy[str]:
    return st.text(
        st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=60
    ) | st.sampled_from([api_key, "ek_" + "x" * 30, "a.b.c", "x" * 9_000])


def auth_headers(api_key: str) -> st.SearchStrategy[dict[str, str]]:
    tokens = header_tokens(api_key)
    return st.one_of(
        st.just({}),
        tokens.map(lambda t: {"Authorization": f"Bearer {t}"}),
        tokens.map(lambda t: {"Authorization": t}),
    )


header_values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80).map(str.strip)
"""Printable ASCII, never starting or ending in a space (HTTP/1.1 cannot carry that: h11 refuses)."""
extra_headers = st.dictionaries(
    st.sampled_from(
        ["Content-Type", "Accept", "X-Session-Id", "Content-Encoding", "Range", "Cookie", "Origin"]
    ),
    header_values | st.sampled_from(["application/json", "multipart/form-data; boundary=x", "gzip"]),
    max_size=3,
)
bodies = st.one_of(json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=300))
query_values = st.text(max_size=30) | st.sampled_from(["-1", "1e309", "x" * 3_000])
queries = st.one_of(
    st.just(""),
    st.dictionaries(st.text(max_size=10), query_values, max_size=3).map(
        lambda q: "?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in q.items())
    ),
    st.text(max_size=40).map(lambda q: "?" + quote(q, safe="=&")),
)
paths = st.one_of(
    st.sampled_from(ENDPOINTS),
    st.sampled_from(ENDPOINTS),
    st.text(max_size=80).map(lambda p: "/web/" + quote(p, safe="")),
    st.text(max_size=80).map(lambda p: "/web/" + quote(p, safe="/%.")),
    st.text(max_size=40).map(lambda p: "/" + quote(p, safe="/")),
)


def requests(api_key: str) -> st.SearchStrategy[Request]:
    """One request: a method, a path and query, authorization (often the right key) and other
    headers, a body."""

    def join(parts: tuple[str, str, str, dict[str, str], dict[str, str], bytes]) -> Request:
        method, path, query, auth, headers, body = parts
        return method, path + query, {**headers, **auth}, body

    return st.tuples(
        st.sampled_from(METHODS), paths, queries, auth_headers(api_key), extra_headers, bodies
    ).map(join)


def run_http_case(target: EdgeTarget, request: Request, timeout_s: float) -> None:
    method, path, headers, body = request
    what = f"{method} {path[:120]}"
    try:
        with httpx.Client(base_url=target.http_url, timeout=timeout_s) as http:
            response = http.request(method, path, headers=headers, content=body or None)
    except httpx.TimeoutException:
        raise Hang(f"no answer within {timeout_s:g} s to {what}") from None
    except httpx.RemoteProtocolError as exc:
        raise ServerFault(f"the connection ended without an answer to {what}: {exc}") from None
    check_http_status(response.status_code, f"{what} ({response.text[:160]!r})", response.text[:2_000])


def describe(request: Any) -> str:
    """A request as a line a person can replay with curl."""
    method, path, headers, body = request
    flags = " ".join(f"-H {json.dumps(f'{k}: {v[:200]}')}" for k, v in headers.items())
    return (
        f"curl -X {method} {flags} --data-binary {json.dumps(body[:300].decode('latin-1'))} 'URL{path[:300]}'"
    )
