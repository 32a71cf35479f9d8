"""Cross-origin access (CORS): which web pages may call the API from a browser."""

from __future__ import annotations

import pytest

from baton.server.settings import origins_from_env, parse_origins
from tests.server.conftest import Live, StartLive

FRONT_END = "http://localhost:3000"


def preflight(origin: str, method: str = "POST") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "authorization, content-type",
    }


async def test_a_listed_origin_passes_preflight_without_a_key_and_then_needs_one(
    start_live: StartLive,
) -> None:
    live: Live = await start_live(keys=["alice:s3cret"], origins=[FRONT_END])

    asked = await live.client.options("/run_sse", headers=preflight(FRONT_END))
    refused = await live.client.get("/list-apps", headers={"Origin": FRONT_END})
    allowed = await live.client.get(
        "/list-apps", headers={"Origin": FRONT_END, "Authorization": "Bearer s3cret"}
    )

    assert asked.status_code == 200
    assert asked.headers["access-control-allow-origin"] == FRONT_END
    assert asked.headers["access-control-allow-credentials"] == "true"
    assert "authorization" in asked.headers["access-control-allow-headers"].lower()
    # Refusals carry the header too, so the page can read why it was refused.
    assert (refused.status_code, refused.headers["access-control-allow-origin"]) == (
        401,
        FRONT_END,
    )
    assert refused.json()["error"] == "Unauthorized"
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == FRONT_END


async def test_an_unlisted_origin_gets_no_cors_headers(start_live: StartLive) -> None:
    live: Live = await start_live(origins=[FRONT_END])

    asked = await live.client.options("/run_sse", headers=preflight("https://evil.example"))
    read = await live.client.get("/list-apps", headers={"Origin": "https://evil.example"})

    assert asked.status_code == 400
    assert "access-control-allow-origin" not in asked.headers
    assert read.status_code == 200  # the server answers; the browser withholds it
    assert "access-control-allow-origin" not in read.headers


async def test_any_origin_is_allowed_without_credentials(start_live: StartLive) -> None:
    live: Live = await start_live(origins=["*"])

    read = await live.client.get("/list-apps", headers={"Origin": "https://any.example"})

    assert read.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in read.headers


async def test_without_allowed_origins_the_server_sends_no_cors_headers(live: Live) -> None:
    asked = await live.client.options("/run_sse", headers=preflight(FRONT_END))
    read = await live.client.get("/list-apps", headers={"Origin": FRONT_END})

    assert asked.status_code == 405
    assert "access-control-allow-origin" not in read.headers


def test_origins_are_normalized_and_deduplicated() -> None:
    assert parse_origins(
        ["HTTP://LocalHost:3000", "http://localhost:3000/", "https://app.example.com", "*"]
    ) == ["http://localhost:3000", "https://app.example.com", "*"]
    assert origins_from_env(" http://a.example , ,https://b.example ") == [
        "http://a.example",
        "https://b.example",
    ]
    assert origins_from_env(None) == []


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("localhost:3000", "'localhost:3000' is not an origin"),
        ("ftp://files.example", "'ftp://files.example' is not an origin"),
        ("https://", "'https://' is not an origin"),
        ("https://app.example.com/inbox", "drop the rest (e.g. https://app.example.com)"),
        ("https://app.example.com?x=1", "has more than scheme, host and port"),
        ("https://user@app.example.com", "has more than scheme, host and port"),
    ],
)
def test_a_string_that_is_not_an_origin_is_refused_by_name(spec: str, named: str) -> None:
    with pytest.raises(ValueError, match="allowed origin") as caught:
        parse_origins([spec])
    assert named in str(caught.value)
