"""Region authentication on a real socket: ``region.app`` behind its guard, served by uvicorn in this
process on stand-in stages (``region.testing``: the models are not what is under test here), and
called with the real clients (``wire.client``, httpx, the router's prober).

Covers: a turn without a token, with an expired one, with one signed by an unknown key (HTTP 401
with a reason at the handshake, never a hang); bare ``/health`` says ready and nothing else;
``/metrics`` needs a token or the scraper's metrics credential, which is refused everywhere else;
key rotation (old and new keys accepted during the overlap, the signer switches, the old key
retires) and metrics-credential rotation; TLS verified against the right CA and refused with a
wrong one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import jwt
import pytest
import trustme
import uvicorn
from click.testing import CliRunner
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from region.app import create_app
from region.node import RegionNode
from region.settings import AdmissionSettings
from region.testing import standin_node
from router.breaker_storage import MemoryBreakerStorage
from router.breakers import BreakerBoard
from router.health_board import HealthBoard
from router.prober import HealthProber
from router.registry import RegionRecord, Registry
from router.settings import RouterSettings
from tests.fixtures.common import free_port
from voicemesh.cli.infra_keys import rotate_key as rotate_key_command
from wire.client import RegionConnection, run_turn
from wire.errors import RegionUnavailable
from wire.region_auth import AUDIENCE, ClientAuth, TokenSigner, TokenVerifier, client_ssl_context
from wire.region_keys import (
    LEEWAY_S,
    MAX_TOKEN_TTL_S,
    METRICS_OVERLAP_S,
    KeyFile,
    KeySetError,
    ensure_key_set,
    ensure_metrics_credential,
    hash_metrics_token,
    metrics_token_path,
    read_key_set,
    rotate_key_set,
    rotate_metrics_credential,
)
from wire.turn import TurnStart

HI = TurnStart(turn_id="t1", text="Hi there")


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the test runner owns the signals


@contextlib.asynccontextmanager
async def serving(
    keys: Path | None, *, tls: trustme.LeafCert | None = None, tmp: Path | None = None,
    node: RegionNode | None = None,
) -> AsyncIterator[str]:  # fmt: skip
    """A stand-in region (``node``, default ``standin_node()``) behind ``RegionGuard`` on a free
    loopback port; yields its base URL."""
    node = node or standin_node()
    await node.warm_up()
    ssl: dict[str, str] = {}
    if tls is not None:
        assert tmp is not None
        pem = tmp / "region.pem"
        tls.private_key_and_cert_chain_pem.write_to_path(str(pem))
        ssl = {"ssl_certfile": str(pem), "ssl_keyfile": str(pem)}
    verifier = TokenVerifier(KeyFile(keys)) if keys is not None else None
    port = free_port()
    server = _Server(
        uvicorn.Config(
            create_app(node, verifier=verifier), host="127.0.0.1", port=port, log_level="warning",
            log_config=None,  # uvicorn's own would stop its loggers propagating for the whole run
            lifespan="on", **ssl,  # type: ignore[arg-type]
        )
    )  # fmt: skip
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the region server stopped while starting"
        await asyncio.sleep(0.01)
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    path = tmp_path / "region-keys.json"
    ensure_key_set(path)
    return path


def _auth(keys: Path) -> ClientAuth:
    """A signer of its own (``ClientAuth.from_paths`` shares one per file and process)."""
    return ClientAuth(signer=TokenSigner(KeyFile(keys)))


async def _handshake_status(url: str, headers: dict[str, str]) -> tuple[int, str]:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(
            url.replace("http", "ws") + "/v1/turns", additional_headers=headers, open_timeout=10
        ):
            pass
    response = refused.value.response
    return response.status_code, response.body.decode() if response.body else ""


# -- the turn WebSocket ---------------------------------------------------------------------------


async def test_a_turn_with_a_valid_token_is_served(keys: Path) -> None:
    async with serving(keys) as url:
        result = await run_turn(url, HI, auth=_auth(keys))
    assert result.status == "completed" and result.text and result.audio


async def test_a_turn_without_a_token_is_refused_with_401_and_a_reason(keys: Path) -> None:
    async with serving(keys) as url:
        status, body = await _handshake_status(url, {})
        with pytest.raises(RegionUnavailable) as caught:
            await RegionConnection.open(url, region="r", auth=ClientAuth())
    assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"
    assert "missing credential" in body
    assert "HTTP 401" in caught.value.message and "missing credential" in caught.value.message


async def test_an_expired_token_is_refused(keys: Path) -> None:
    key, then = read_key_set(keys).keys[0], int(time.time() - 60 - LEEWAY_S - 5)
    claims = {"aud": AUDIENCE, "iat": then, "exp": then + 60}
    stale = jwt.encode(claims, key.secret_bytes, algorithm="HS256", headers={"kid": key.kid})
    async with serving(keys) as url:
        status, body = await _handshake_status(url, {"Authorization": f"Bearer {stale}"})
    assert status == 401 and "token expired" in body


async def test_a_token_signed_by_an_unknown_key_is_refused(keys: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-keys.json"
    ensure_key_set(other)
    async with serving(keys) as url:
        status, body = await _handshake_status(url, _auth(other).headers())
    assert status == 401 and "unknown or retired key" in body


async def test_forged_and_oversized_credentials_are_refused_at_once(keys: Path) -> None:
    key = read_key_set(keys).keys[0]
    wrong_audience = jwt.encode(
        {"aud": "someone-else", "iat": int(time.time()), "exp": int(time.time()) + 60},
        key.secret_bytes, algorithm="HS256", headers={"kid": key.kid},
    )  # fmt: skip
    too_long = jwt.encode(
        {"aud": AUDIENCE, "iat": int(time.time()), "exp": int(time.time()) + 3600},
        key.secret_bytes, algorithm="HS256", headers={"kid": key.kid},
    )  # fmt: skip
    unsigned = jwt.encode({"aud": AUDIENCE}, "", algorithm="none")
    cases = {
        "token not meant for a region": f"Bearer {wrong_audience}",
        "token lifetime too long": f"Bearer {too_long}",
        "unknown or retired key": f"Bearer {unsigned}",
        # Over our bound, under 8 KiB: uvicorn's websockets-sansio never answers a longer header line.
        "credential too long": "Bearer " + "a" * 3000,
        "expected Authorization: Bearer": "Basic dXNlcjpwYXNz",
        "malformed token": "Bearer not-a-jwt",
    }
    async with serving(keys) as url:
        for reason, header in cases.items():
            status, body = await _handshake_status(url, {"Authorization": header})
            assert status == 401 and reason in body, (reason, body)


# -- HTTP endpoints -------------------------------------------------------------------------------


async def test_bare_health_says_ready_and_nothing_else(keys: Path) -> None:
    async with serving(keys) as url, httpx.AsyncClient(base_url=url) as http:
        bare = await http.get("/health")
        full = await http.get("/health", headers=_auth(keys).headers())
        bad = await http.get("/health", headers={"Authorization": "Bearer nope"})
    assert bare.status_code == 200 and bare.json() == {"status": "ready"}
    body = full.json()
    assert full.status_code == 200 and body["region"] == "stand-in" and "llm_url" in body and "load" in body
    assert bad.status_code == 401 and "malformed token" in bad.text  # a wrong token is not a bare probe


async def test_metrics_need_a_token(keys: Path) -> None:
    async with serving(keys) as url, httpx.AsyncClient(base_url=url) as http:
        anonymous = await http.get("/metrics")
        signed = await http.get("/metrics", headers=_auth(keys).headers())
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
    assert signed.status_code == 200 and "voicemesh_region" in signed.text


# -- the metrics credential (a scraper's: no token minting) -------------------------------------


@pytest.fixture
def scraper_token(keys: Path, tmp_path: Path) -> str:
    """The raw metrics secret, moved out of the region's reach: the region has only the key file."""
    assert ensure_metrics_credential(keys) and not ensure_metrics_credential(keys)
    written = metrics_token_path(keys)
    assert written.stat().st_mode & 0o777 == 0o600
    token = written.read_text()
    written.rename(tmp_path / "scraper-only.token")
    return token


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_key_file_holds_the_metrics_hash_never_the_secret(keys: Path, scraper_token: str) -> None:
    stored = keys.read_text()
    assert scraper_token.startswith("vmm_") and scraper_token not in stored
    assert [c.sha256 for c in read_key_set(keys).metrics] == [hash_metrics_token(scraper_token)]


async def test_the_metrics_credential_reads_metrics_and_nothing_else(keys: Path, scraper_token: str) -> None:
    async with serving(keys) as url, httpx.AsyncClient(base_url=url) as http:
        metrics = await http.get("/metrics", headers=_bearer(scraper_token))
        full_health = await http.get("/health", headers=_bearer(scraper_token))
        bare_health = await http.get("/health")
        posted = await http.post("/metrics", headers=_bearer(scraper_token))
        wrong = await http.get("/metrics", headers=_bearer("vmm_" + "A" * 43))
        signed = await http.get("/metrics", headers=_auth(keys).headers())
        turn_status, turn_body = await _handshake_status(url, _bearer(scraper_token))
    assert metrics.status_code == 200 and "voicemesh_region" in metrics.text
    assert full_health.status_code == 401 and "GET /metrics only" in full_health.text
    assert bare_health.status_code == 200 and bare_health.json() == {"status": "ready"}
    assert posted.status_code == 401 and "GET /metrics only" in posted.text
    assert wrong.status_code == 401 and "unknown or retired metrics credential" in wrong.text
    assert signed.status_code == 200  # an edge's region token still reads /metrics
    assert turn_status == 401 and "GET /metrics only" in turn_body


async def test_metrics_credential_rotation_overlaps_then_retires_the_old(
    keys: Path, scraper_token: str
) -> None:
    rotation = rotate_metrics_credential(keys)
    new_token = metrics_token_path(keys).read_text()
    assert new_token != scraper_token
    async with serving(keys) as url, httpx.AsyncClient(base_url=url) as http:
        for token in (scraper_token, new_token):  # the overlap: the scraper may still hold the old one
            assert (await http.get("/metrics", headers=_bearer(token))).status_code == 200

    rotate_key_set(keys)  # rotating the signing keys keeps the metrics credentials
    assert [c.kid for c in read_key_set(keys).metrics][-1] == rotation.added
    verifier = TokenVerifier(KeyFile(keys))
    after = time.time() + METRICS_OVERLAP_S + 1
    assert (
        verifier.metrics_refusal(f"Bearer {scraper_token}", now=after)
        == "unknown or retired metrics credential"
    )
    assert verifier.metrics_refusal(f"Bearer {new_token}", now=after) is None
    dropped = rotate_metrics_credential(keys, now=after)
    assert dropped.dropped == rotation.retiring and len(read_key_set(keys).metrics) == 2


def test_rotate_key_metrics_writes_the_secret_privately_and_never_prints_it(tmp_path: Path) -> None:
    keys, token_file = tmp_path / "keys.json", tmp_path / "scraper" / "token"
    token_file.parent.mkdir()
    ensure_key_set(keys)
    result = CliRunner().invoke(
        rotate_key_command, ["--keys", str(keys), "--metrics", "--metrics-token", str(token_file)]
    )
    assert result.exit_code == 0, result.output
    token = token_file.read_text()
    assert token.startswith("vmm_") and token not in result.output and token not in keys.read_text()
    assert token_file.stat().st_mode & 0o777 == 0o600 and keys.stat().st_mode & 0o777 == 0o600
    assert TokenVerifier(KeyFile(keys)).metrics_refusal(f"Bearer {token}") is None


async def test_the_routers_prober_reads_the_full_health_with_its_token(keys: Path) -> None:
    async with serving(keys) as url:
        settings = RouterSettings(region_keys_path=str(keys), probe_interval_s=0)
        board = HealthBoard(settings, BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=1))
        board.apply(Registry(regions=[RegionRecord(id="stand-in", url=url)]))
        region = board.regions["stand-in"]
        prober = HealthProber(settings, board)
        try:
            await prober.probe(region)
        finally:
            await prober.aclose()
    assert (
        region.probe_ok
        and region.report is not None
        and region.report.capacity == AdmissionSettings().max_concurrent
    )


# -- rotation -------------------------------------------------------------------------------------


async def test_rotation_accepts_old_and_new_keys_then_retires_the_old(keys: Path) -> None:
    edge = TokenSigner(KeyFile(keys))
    old_token, old_kid = edge.token(), edge.kid
    async with serving(keys) as url:
        rotation = rotate_key_set(keys)
        assert rotation.retiring == [old_kid]
        new_token = edge.token()  # the signer re-reads the file and switches to the newest key
        assert edge.kid == rotation.added != old_kid
        for token in (old_token, new_token):  # the overlap: a region accepts both
            result = await run_turn(url, HI, auth=ClientAuth(signer=_Fixed(token)))  # type: ignore[arg-type]
            assert result.status == "completed"

    verifier = TokenVerifier(KeyFile(keys))
    after = time.time() + MAX_TOKEN_TTL_S + LEEWAY_S + 1
    retired = TokenSigner(KeyFile(keys)).token()  # a fresh token now signs with the new key...
    forged_old = jwt.encode(
        {"aud": AUDIENCE, "iat": int(after), "exp": int(after) + 60},
        next(k for k in read_key_set(keys).keys if k.kid == old_kid).secret_bytes,
        algorithm="HS256", headers={"kid": old_kid},
    )  # fmt: skip
    assert verifier.refusal(f"Bearer {retired}") is None
    assert verifier.refusal(f"Bearer {forged_old}", now=after) == "token signed by an unknown or retired key"
    dropped = rotate_key_set(keys, now=after)
    assert dropped.dropped == [old_kid] and old_kid not in {k.kid for k in read_key_set(keys).keys}


async def test_a_delayed_key_is_accepted_before_edges_sign_with_it(keys: Path) -> None:
    edge = TokenSigner(KeyFile(keys))
    first = edge.token() and edge.kid
    rotation = rotate_key_set(keys, activate_in_s=120)
    edge.token()
    assert edge.kid == first  # not yet: the file may still be on its way to some regions
    edge.token(now=time.time() + 121)
    assert edge.kid == rotation.added


class _Fixed:
    """A signer that always presents the same token (an edge that minted it before a rotation)."""

    def __init__(self, token: str) -> None:
        self._token = token

    def authorization(self) -> str:
        return f"Bearer {self._token}"


# -- the key file ---------------------------------------------------------------------------------


def test_the_key_file_is_private_and_secrets_never_print(keys: Path) -> None:
    assert keys.stat().st_mode & 0o777 == 0o600
    rotate_key_set(keys)
    assert keys.stat().st_mode & 0o777 == 0o600
    key = read_key_set(keys).keys[0]
    assert key.secret not in repr(key) and key.secret not in repr(read_key_set(keys))


def test_a_metrics_entry_that_is_not_a_sha256_makes_the_key_file_invalid(keys: Path) -> None:
    stored = json.loads(keys.read_text())
    stored["metrics"] = [{"kid": "m-1", "sha256": "vmm_raw-secret-pasted-here", "created": 0.0}]
    keys.write_text(json.dumps(stored))
    with pytest.raises(KeySetError, match="not a hex SHA-256"):
        read_key_set(keys)


def test_a_broken_key_file_keeps_the_last_good_set(keys: Path) -> None:
    file = KeyFile(keys)
    good = file.current()
    keys.write_text("{not json")
    assert file.current() == good


# -- TLS ------------------------------------------------------------------------------------------


async def test_tls_with_the_right_ca_is_verified_and_a_wrong_ca_refused(keys: Path, tmp_path: Path) -> None:
    ca, stranger = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    stranger.cert_pem.write_to_path(str(tmp_path / "stranger.pem"))
    trusted = ClientAuth(signer=TokenSigner(KeyFile(keys)), ssl=client_ssl_context(tmp_path / "ca.pem"))
    wrong = ClientAuth(signer=TokenSigner(KeyFile(keys)), ssl=client_ssl_context(tmp_path / "stranger.pem"))
    async with serving(keys, tls=ca.issue_cert("127.0.0.1"), tmp=tmp_path) as url:
        assert url.startswith("https://")
        result = await run_turn(url, HI, auth=trusted)  # wss://, verified
        assert result.status == "completed"
        async with httpx.AsyncClient(verify=trusted.ssl or True) as http:
            assert (await http.get(url + "/health", headers=trusted.headers())).json()["status"] == "ready"
        with pytest.raises(RegionUnavailable) as caught:
            await RegionConnection.open(url, region="r", auth=wrong)
        assert "CERTIFICATE_VERIFY_FAILED" in caught.value.message
        async with httpx.AsyncClient(verify=wrong.ssl or True) as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(url + "/health")
