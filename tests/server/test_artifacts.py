"""The reference's artifact routes on a live server, over SQLite and PostgreSQL: what a
node saved is listed, loaded (latest, by version), described and downloaded; clients
save and delete; a saved `artifact://` reference is served as what it names; bad
requests are refused with the reason and change nothing."""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

import pytest

from baton import App, Context, RequestInput, ResumabilityConfig, Workflow, types
from tests.server.conftest import Live, StartLive

PDF = b"%PDF-1.7\n\x00\xff\xfe binary"


async def write_report(ctx: Context) -> int:
    await ctx.save_artifact(
        "reports/q3.pdf",
        types.Part.from_bytes(data=PDF, mime_type="application/pdf"),
        custom_metadata={"pages": 1},
    )
    return await ctx.save_artifact("user:notes.txt", types.Part.from_text(text="remember"))


def approve(node_input: int) -> RequestInput:
    return RequestInput(interrupt_id="ok", message="Approve the report?")


def report_app() -> App:
    return App(
        name="reports",
        root_agent=Workflow(name="reports_wf", edges=[("START", write_report, approve)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


@pytest.fixture
async def served(emptied_store_url: str, start_live: StartLive) -> tuple[Live, str]:
    live: Live = await start_live([report_app()], db_url=emptied_store_url)
    session = await live.create("reports", "ann")
    await live.start("reports", "ann", session)
    return live, f"/apps/reports/users/ann/sessions/{session}/artifacts"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


async def test_what_a_node_saved_is_listed_loaded_and_described(served: tuple[Live, str]) -> None:
    live, base = served
    c = live.client

    assert (await c.get(base)).json() == ["reports/q3.pdf", "user:notes.txt"]
    latest = await c.get(f"{base}/reports/q3.pdf")
    assert latest.json() == {"inlineData": {"mimeType": "application/pdf", "data": _b64(PDF)}}
    assert (await c.get(f"{base}/reports/q3.pdf/versions/latest")).json() == latest.json()
    assert (await c.get(f"{base}/reports/q3.pdf/versions/0")).json() == latest.json()
    assert (await c.get(f"{base}/reports/q3.pdf/versions")).json() == [0]
    meta = (await c.get(f"{base}/reports/q3.pdf/versions/0/metadata")).json()
    session = base.split("/")[-2]
    assert meta == {
        "version": 0,
        "canonicalUri": (
            f"artifact://apps/reports/users/ann/sessions/{session}/artifacts/reports/q3.pdf"
            "/versions/0"
        ),
        "customMetadata": {"pages": 1},
        "createTime": meta["createTime"],
        "mimeType": "application/pdf",
    }
    assert (await c.get(f"{base}/reports/q3.pdf/versions/metadata")).json() == [meta]
    assert (await c.get(f"{base}/user:notes.txt")).json() == {"text": "remember"}


async def test_a_client_saves_versions_downloads_and_deletes(served: tuple[Live, str]) -> None:
    live, base = served
    c = live.client
    body: dict[str, Any] = {
        "filename": "reports/q3.pdf",
        "artifact": {"inlineData": {"mimeType": "application/pdf", "data": _b64(b"v2")}},
        "customMetadata": {"by": "ann"},
    }

    saved = await c.post(base, json=body)
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == 1
    assert saved.json()["customMetadata"] == {"by": "ann"}
    assert (await c.get(f"{base}/reports/q3.pdf", params={"version": 0})).json()["inlineData"][
        "data"
    ] == _b64(PDF)
    files = base.replace("/artifacts", "/artifact-files")
    download = await c.get(f"{files}/reports/q3.pdf", params={"version": 0})
    assert download.status_code == 200
    assert download.content == PDF
    assert download.headers["content-type"] == "application/pdf"
    assert download.headers["content-disposition"] == "attachment; filename*=UTF-8''q3.pdf"
    assert download.headers["content-security-policy"] == "sandbox"
    assert (await c.get(f"{files}/reports/q3.pdf")).content == b"v2"
    text = await c.get(f"{files}/user:notes.txt")
    assert text.text == "remember"
    assert text.headers["content-type"] == "text/plain; charset=utf-8"

    deleted = await c.delete(f"{base}/reports/q3.pdf")
    assert deleted.status_code == 200  # with a JSON null, as the reference's
    assert deleted.json() is None
    assert (await c.get(base)).json() == ["user:notes.txt"]
    gone = await c.get(f"{base}/reports/q3.pdf")
    assert gone.status_code == 404
    assert gone.json()["error"] == "ArtifactNotFoundError"


async def test_a_saved_artifact_reference_is_served_as_what_it_names(
    served: tuple[Live, str],
) -> None:
    live, base = served
    session = base.split("/")[-2]
    uri = (
        f"artifact://apps/reports/users/ann/sessions/{session}/artifacts/reports/q3.pdf/versions/0"
    )

    saved = await live.client.post(
        base, json={"filename": "approved.pdf", "artifact": {"fileData": {"fileUri": uri}}}
    )

    assert saved.status_code == 200, saved.text
    shown = await live.client.get(f"{base}/approved.pdf")
    assert shown.json() == {"inlineData": {"mimeType": "application/pdf", "data": _b64(PDF)}}
    files = base.replace("/artifacts", "/artifact-files")
    assert (await live.client.get(f"{files}/approved.pdf")).content == PDF


class Bad(NamedTuple):
    """A request refused: its status and a text the refusal names."""

    case: str
    method: str
    path: str
    body: dict[str, Any] | None
    status: int
    named: str


BAD = [
    Bad("version-word", "GET", "/reports/q3.pdf/versions/abc", None, 400, "'abc'"),
    Bad("no-version", "GET", "/reports/q3.pdf/versions/7", None, 404, "version 7"),
    Bad("meta", "GET", "/reports/q3.pdf/versions/7/metadata", None, 404, "version 7"),
    Bad("no-name", "GET", "/nothing.txt", None, 404, "'nothing.txt'"),
    Bad("negative", "GET", "/reports/q3.pdf?version=-1", None, 422, "version"),
    Bad("empty-name", "POST", "", {"filename": "", "artifact": {"text": "x"}}, 400, "is empty"),
    Bad(
        "bad-base64",
        "POST",
        "",
        {"filename": "a.bin", "artifact": {"inlineData": {"data": "%%%"}}},
        400,
        "base64",
    ),
    Bad("empty", "POST", "", {"filename": "a", "artifact": {}}, 400, "no content"),
    Bad("ctl", "POST", "", {"filename": "a\x07", "artifact": {"text": "x"}}, 400, "U+0007"),
    Bad("no-filename", "POST", "", {"artifact": {"text": "x"}}, 422, "filename"),
    Bad(
        "reference-out-of-scope",
        "POST",
        "",
        {
            "filename": "stolen.pdf",
            "artifact": {
                "fileData": {
                    "fileUri": "artifact://apps/reports/users/bob/artifacts/user:x/versions/0"
                }
            },
        },
        400,
        "user 'bob'",
    ),
]


async def test_bad_requests_are_refused_with_the_reason_and_change_nothing(
    served: tuple[Live, str],
) -> None:
    # One server for all of them (each case a server of its own cost more than the case).
    live, base = served
    for case in BAD:
        before = (await live.client.get(base)).json()

        refused = await live.client.request(case.method, f"{base}{case.path}", json=case.body)

        assert refused.status_code == case.status, (case.case, refused.text)
        assert case.named in refused.text, case.case
        assert (await live.client.get(base)).json() == before, case.case
        versions = await live.client.get(f"{base}/reports/q3.pdf/versions")
        assert versions.json() == [0], case.case


async def test_an_unknown_session_or_app_is_404_and_nothing_is_saved(
    served: tuple[Live, str],
) -> None:
    live, _ = served
    missing = "/apps/reports/users/ann/sessions/nope/artifacts"
    body = {"filename": "a.txt", "artifact": {"text": "x"}}

    for refused in (
        await live.client.post(missing, json=body),
        await live.client.get(missing),
        await live.client.get(f"{missing}/a.txt"),
        await live.client.post("/apps/other/users/ann/sessions/s/artifacts", json=body),
    ):
        assert refused.status_code == 404, refused.text
    saved_for = await live.client.get(missing.replace("nope", "nope"))
    assert saved_for.json()["error"] == "SessionNotFoundError"
    assert "'nope'" in saved_for.json()["detail"]
