"""What the fuzzer points at: a running edge (its URL and an API key) or a running region (its URL
and the region key set that signs its tokens)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wire.region_auth import ClientAuth


@dataclass(frozen=True)
class EdgeTarget:
    url: str
    """``http(s)://host:port`` of an edge or of the front door before the edges."""
    api_key: str

    @property
    def http_url(self) -> str:
        return self.url.rstrip("/")

    @property
    def realtime_url(self) -> str:
        base = self.http_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        return f"{base}/v1/realtime?model=fuzz"

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


@dataclass(frozen=True)
class RegionTarget:
    url: str
    """``http(s)://host:port`` of a region (``wire.client.turns_url`` makes the turn WebSocket's)."""
    keys_path: Path | None
    """The region key set (``voicemesh infra keys``): well-formed turns are signed with it; without
    one only the refusal of bad tokens is fuzzed."""

    @property
    def http_url(self) -> str:
        return self.url.rstrip("/")

    def auth(self) -> ClientAuth:
        return ClientAuth.from_paths(self.keys_path)
