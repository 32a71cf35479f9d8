"""`artifact://` references on every backend: a version whose Part is a file URI naming
another artifact version loads as that version (through chains, in the session or the
user's scope); references out of the app, user or session, malformed ones, and chains
that loop are refused with the reason, and a refused save stores nothing."""

from __future__ import annotations

from typing import Any

import pytest

from baton import types
from baton.artifacts import BaseArtifactService, artifact_uri
from baton.errors import InvalidArtifactError
from baton.sessions.artifacts import ArtifactKey
from baton.sessions.store import Store

PNG = types.Part.from_bytes(data=b"\x89PNG\r\n\x1a\n\x00\xff", mime_type="image/png")


@pytest.fixture
def service(store: Store) -> BaseArtifactService:
    return BaseArtifactService(store)


def _in(session_id: str = "s1", **more: Any) -> dict[str, Any]:
    return {"app_name": "app", "user_id": "u", "session_id": session_id, **more}


def ref(filename: str, version: int, *, session: str = "s1", user: str = "u") -> types.Part:
    uri = artifact_uri(ArtifactKey("app", user, session, filename), version)
    return types.Part(file_data=types.FileData(file_uri=uri))


async def test_a_reference_loads_as_the_version_it_names_through_a_chain(
    service: BaseArtifactService,
) -> None:
    await service.save_artifact(**_in(), filename="chart.png", artifact=PNG)
    await service.save_artifact(
        **_in(), filename="chart.png", artifact=types.Part.from_text(text="v1")
    )
    await service.save_artifact(**_in(), filename="latest.png", artifact=ref("chart.png", 0))
    await service.save_artifact(**_in(), filename="shown.png", artifact=ref("latest.png", 0))
    await service.save_artifact(**_in(), filename="user:logo.png", artifact=ref("chart.png", 1))
    await service.save_artifact(
        **_in(), filename="pinned.png", artifact=ref("user:logo.png", 0, session="")
    )

    assert await service.load_artifact(**_in(), filename="latest.png") == PNG
    assert await service.load_artifact(**_in(), filename="shown.png") == PNG
    assert await service.load_artifact(**_in(), filename="user:logo.png") == types.Part.from_text(
        text="v1"
    )
    assert await service.load_artifact(**_in(), filename="pinned.png") == types.Part.from_text(
        text="v1"
    )
    info = await service.get_artifact_version(**_in(), filename="latest.png")
    assert info is not None
    assert info.mime_type is None  # a reference's type is its target's


async def test_a_reference_to_a_missing_version_loads_as_nothing(
    service: BaseArtifactService,
) -> None:
    await service.save_artifact(**_in(), filename="a.png", artifact=ref("chart.png", 3))

    assert await service.load_artifact(**_in(), filename="a.png") is None


async def test_a_loop_of_references_is_refused_with_its_chain(
    service: BaseArtifactService,
) -> None:
    await service.save_artifact(**_in(), filename="a", artifact=ref("b", 0))
    await service.save_artifact(**_in(), filename="b", artifact=ref("a", 0))

    with pytest.raises(InvalidArtifactError) as refused:
        await service.load_artifact(**_in(), filename="a")

    hops = str(refused.value).split("(")[1].split(")")[0].split(" -> ")
    assert len(hops) == 6
    assert hops[0].endswith("/artifacts/b/versions/0")
    assert "more than 5 artifact:// references" in str(refused.value)


async def test_a_user_artifact_referencing_a_session_is_read_from_that_session_only(
    service: BaseArtifactService,
) -> None:
    await service.save_artifact(**_in(), filename="chart.png", artifact=PNG)
    await service.save_artifact(**_in(), filename="user:last.png", artifact=ref("chart.png", 0))

    assert await service.load_artifact(**_in(), filename="user:last.png") == PNG
    with pytest.raises(InvalidArtifactError, match="session 's1'; one of session 's2'"):
        await service.load_artifact(**_in("s2"), filename="user:last.png")


BAD = [
    pytest.param("artifact://apps/app/users/u/files/x", "is not an artifact URI", id="malformed"),
    pytest.param(
        artifact_uri(ArtifactKey("app", "eve", "s1", "a.png"), 0), "user 'eve'", id="other-user"
    ),
    pytest.param(
        artifact_uri(ArtifactKey("other", "u", "s1", "a.png"), 0), "app 'other'", id="other-app"
    ),
    pytest.param(
        artifact_uri(ArtifactKey("app", "u", "s9", "a.png"), 0),
        "names an artifact of session 's9'",
        id="other-session",
    ),
    pytest.param(
        artifact_uri(ArtifactKey("app", "u", "", "a.png"), 0),
        "names 'a.png' without a session",
        id="session-name-as-user",
    ),
]


@pytest.mark.parametrize(("uri", "named"), BAD)
async def test_a_reference_out_of_scope_or_malformed_is_refused_and_nothing_saved(
    service: BaseArtifactService, uri: str, named: str
) -> None:
    part = types.Part(file_data=types.FileData(file_uri=uri))

    with pytest.raises(InvalidArtifactError, match=named):
        await service.save_artifact(**_in(), filename="ref.png", artifact=part)

    assert await service.list_artifact_keys(**_in()) == []
