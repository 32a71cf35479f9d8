"""Every response carries the browser protections; API keys are compared in constant time."""

from __future__ import annotations

import hmac

import pytest

from baton.server import security
from tests.server.conftest import Live, StartLive

PROTECTIONS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": "frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
}


async def test_the_inbox_page_and_the_api_cannot_be_framed_or_sniffed(
    start_live: StartLive,
) -> None:
    live: Live = await start_live(web=True, keys=["op-key"])
    page = await live.client.get("/")
    assert page.headers["content-type"].startswith("text/html")
    refused = await live.client.post("/run", json={})  # no key: refused before the body
    api = await live.client.get("/health")
    for response in (page, refused, api):
        assert {k: response.headers.get(k) for k in PROTECTIONS} == PROTECTIONS
    assert refused.status_code == 401


async def test_api_keys_are_compared_in_constant_time(
    start_live: StartLive, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    compare = hmac.compare_digest  # the real one, before the patch replaces it

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", recording)
    live: Live = await start_live(keys=["alice:alice-key", "op-key"])
    denied = await live.client.get("/list-apps", headers={"X-API-Key": "guess"})
    allowed = await live.client.get("/list-apps", headers={"Authorization": "Bearer op-key"})
    assert (denied.status_code, allowed.status_code) == (401, 200)
    # Every known key was compared with the guess through hmac.compare_digest, never `==`.
    assert {known for known, given in compared if given == b"guess"} == {b"alice-key", b"op-key"}
    assert (b"op-key", b"op-key") in compared
