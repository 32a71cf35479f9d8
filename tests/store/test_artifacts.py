"""Artifacts on every backend, through the service users call (`BaseArtifactService` over
the test's store): versions numbered from 0, `user:` names seen from every session of
the user, a repeated save key landing on its version, deletion, and refusals that
change nothing."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from baton import types
from baton.artifacts import ArtifactVersion, BaseArtifactService
from baton.errors import InvalidArtifactError, InvalidIdError, InvalidMessageError
from baton.sessions.store import SessionKey, Store
from baton.types import SessionId
from tests.conftest import FakeClock, StoreFactory

PNG = types.Part.from_bytes(data=b"\x89PNG\r\n\x1a\n\x00\xff", mime_type="image/png")


def _text(text: str) -> types.Part:
    return types.Part.from_text(text=text)


@pytest.fixture
def service(store: Store) -> BaseArtifactService:
    return BaseArtifactService(store)


def _in(session_id: str = "s1", **more: Any) -> dict[str, Any]:
    return {"app_name": "app", "user_id": "u", "session_id": session_id, **more}


async def test_saves_number_versions_from_zero_and_load_the_latest_or_a_given_one(
    service: BaseArtifactService,
) -> None:
    assert await service.save_artifact(**_in(), filename="a.png", artifact=PNG) == 0
    assert await service.save_artifact(**_in(), filename="a.png", artifact=_text("v1")) == 1

    assert await service.load_artifact(**_in(), filename="a.png") == _text("v1")
    assert await service.load_artifact(**_in(), filename="a.png", version=0) == PNG
    assert await service.load_artifact(**_in(), filename="a.png", version=2) is None
    assert await service.load_artifact(**_in(), filename="a.png", version=-1) is None
    assert await service.load_artifact(**_in(), filename="none.png") is None
    assert await service.list_versions(**_in(), filename="a.png") == [0, 1]
    assert await service.list_versions(**_in(), filename="none.png") == []


async def test_version_metadata_carries_mime_type_metadata_and_uri(
    service: BaseArtifactService, clock: FakeClock
) -> None:
    saved_at: list[float] = []
    await service.save_artifact(
        **_in(), filename="a.png", artifact=PNG, custom_metadata={"by": "ann", "n": [1, 2]}
    )
    saved_at.append(clock.now)
    clock.advance(5)
    await service.save_artifact(**_in(), filename="a.png", artifact=_text("hello"))
    saved_at.append(clock.now)

    first = ArtifactVersion(
        version=0,
        canonical_uri="artifact://apps/app/users/u/sessions/s1/artifacts/a.png/versions/0",
        custom_metadata={"by": "ann", "n": [1, 2]},
        mime_type="image/png",
    )
    second = ArtifactVersion(
        version=1,
        canonical_uri="artifact://apps/app/users/u/sessions/s1/artifacts/a.png/versions/1",
        mime_type="text/plain",
    )
    listed = await service.list_artifact_versions(**_in(), filename="a.png")
    # The clock ticks a little on every read: each version was stamped during its save.
    assert saved_at[0] - 0.01 < listed[0].create_time <= saved_at[0]
    assert saved_at[1] - 0.01 < listed[1].create_time <= saved_at[1]
    first.create_time, second.create_time = listed[0].create_time, listed[1].create_time
    assert listed == [first, second]
    assert await service.get_artifact_version(**_in(), filename="a.png") == second
    assert await service.get_artifact_version(**_in(), filename="a.png", version=0) == first
    assert await service.get_artifact_version(**_in(), filename="a.png", version=7) is None
    assert first.to_wire()["canonicalUri"].endswith("/versions/0")


async def test_user_names_are_seen_from_every_session_and_session_names_stay_in_theirs(
    service: BaseArtifactService,
) -> None:
    await service.save_artifact(**_in("s1"), filename="user:profile.txt", artifact=_text("p"))
    await service.save_artifact(**_in("s1"), filename="draft.txt", artifact=_text("d1"))
    await service.save_artifact(**_in("s2"), filename="other.txt", artifact=_text("o"))
    await service.save_artifact(
        app_name="app", user_id="bob", session_id="s1", filename="bob.txt", artifact=_text("b")
    )

    assert await service.list_artifact_keys(**_in("s1")) == ["draft.txt", "user:profile.txt"]
    assert await service.list_artifact_keys(**_in("s2")) == ["other.txt", "user:profile.txt"]
    assert await service.list_artifact_keys(app_name="app", user_id="u") == ["user:profile.txt"]
    loaded = await service.load_artifact(**_in("s2"), filename="user:profile.txt")
    assert loaded == _text("p")
    # Without a session, a user name still loads; a session name does not leak across.
    user_only = await service.load_artifact(
        app_name="app", user_id="u", filename="user:profile.txt"
    )
    assert user_only == _text("p")
    assert await service.load_artifact(**_in("s2"), filename="draft.txt") is None


async def test_a_repeated_save_key_lands_on_its_version_with_the_new_content(
    service: BaseArtifactService,
) -> None:
    assert (
        await service.save_artifact(**_in(), filename="r", artifact=_text("a"), save_key="k1") == 0
    )
    assert await service.save_artifact(**_in(), filename="r", artifact=_text("b")) == 1
    again = await service.save_artifact(**_in(), filename="r", artifact=_text("a2"), save_key="k1")

    assert again == 0
    assert await service.list_versions(**_in(), filename="r") == [0, 1]
    assert await service.load_artifact(**_in(), filename="r", version=0) == _text("a2")
    assert (
        await service.save_artifact(**_in(), filename="r", artifact=_text("c"), save_key="k2") == 2
    )


async def test_delete_removes_every_version_and_numbering_starts_again(
    service: BaseArtifactService,
) -> None:
    for text in ("a", "b"):
        await service.save_artifact(**_in(), filename="r", artifact=_text(text))
    await service.save_artifact(**_in(), filename="keep", artifact=_text("k"))

    await service.delete_artifact(**_in(), filename="r")
    await service.delete_artifact(**_in(), filename="never-saved")

    assert await service.list_artifact_keys(**_in()) == ["keep"]
    assert await service.load_artifact(**_in(), filename="r") is None
    assert await service.save_artifact(**_in(), filename="r", artifact=_text("c")) == 0


async def test_deleting_a_session_deletes_its_artifacts_but_not_the_users(store: Store) -> None:
    service = BaseArtifactService(store)
    await store.create_session("app", "u", session_id=SessionId("s1"))
    await service.save_artifact(**_in("s1"), filename="draft", artifact=_text("d"))
    await service.save_artifact(**_in("s1"), filename="user:prefs", artifact=_text("p"))
    await service.save_artifact(**_in("s2"), filename="draft", artifact=_text("other"))

    assert await store.delete_session(SessionKey("app", "u", SessionId("s1")))

    assert await service.list_artifact_keys(**_in("s1")) == ["user:prefs"]
    assert await service.load_artifact(**_in("s2"), filename="draft") == _text("other")


async def test_inline_bytes_and_file_references_round_trip_exactly(
    service: BaseArtifactService,
) -> None:
    every_byte = types.Part.from_bytes(data=bytes(range(256)) * 40, mime_type="application/pdf")
    uri = types.Part.from_uri(file_uri="gs://bucket/doc.pdf", mime_type="application/pdf")
    await service.save_artifact(**_in(), filename="doc.pdf", artifact=every_byte)
    await service.save_artifact(**_in(), filename="ref.pdf", artifact=uri)
    # The wire form as a dict, as HTTP clients send it (camelCase, base64).
    await service.save_artifact(
        **_in(),
        filename="wire.bin",
        artifact={"inlineData": {"mimeType": "application/octet-stream", "data": "AAEC_w=="}},
    )

    assert await service.load_artifact(**_in(), filename="doc.pdf") == every_byte
    assert await service.load_artifact(**_in(), filename="ref.pdf") == uri
    wire = await service.load_artifact(**_in(), filename="wire.bin")
    assert wire is not None
    assert wire.inline_data is not None
    assert wire.inline_data.data == b"\x00\x01\x02\xff"


def _deep(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels):
        value = [value]
    return value


BAD_SAVES = [
    pytest.param({"filename": ""}, InvalidArtifactError, "is empty", id="empty-name"),
    pytest.param({"filename": "user:"}, InvalidArtifactError, "is empty", id="bare-user-prefix"),
    pytest.param({"filename": "a\nb"}, InvalidArtifactError, "U+000A", id="control-char"),
    pytest.param({"filename": "x" * 1025}, InvalidArtifactError, "1025 characters", id="long"),
    pytest.param({"filename": 7}, InvalidArtifactError, "got int 7", id="name-not-str"),
    pytest.param({"session_id": None}, InvalidArtifactError, "no session_id", id="no-session"),
    pytest.param({"session_id": "s\x00"}, InvalidIdError, "session_id", id="bad-session"),
    pytest.param({"user_id": "u" * 300}, InvalidIdError, "user_id", id="long-user"),
    pytest.param({"artifact": b"raw"}, InvalidArtifactError, "got bytes", id="bytes"),
    pytest.param({"artifact": types.Part()}, InvalidArtifactError, "no content", id="empty"),
    pytest.param(
        {"artifact": {"inlineData": {"data": "!!!"}}}, InvalidArtifactError, "base64", id="b64"
    ),
    pytest.param(
        {"artifact": types.Part(function_call=types.FunctionCall(name="f"))},
        InvalidArtifactError,
        "not artifacts",
        id="function-call",
    ),
    pytest.param(
        {"custom_metadata": {"when": object()}}, InvalidArtifactError, "custom_metadata", id="meta"
    ),
    pytest.param({"custom_metadata": ["x"]}, InvalidArtifactError, "got list", id="meta-list"),
    pytest.param(
        {"custom_metadata": {"d": _deep(150)}}, InvalidMessageError, "custom_metadata", id="deep"
    ),
]


@pytest.mark.parametrize(("change", "error", "named"), BAD_SAVES)
async def test_a_refused_save_names_the_problem_and_stores_nothing(
    service: BaseArtifactService, change: dict[str, Any], error: type[Exception], named: str
) -> None:
    call: dict[str, Any] = {**_in(), "filename": "f.txt", "artifact": _text("x"), **change}
    with pytest.raises(error, match=re.escape(named)):
        await service.save_artifact(**call)

    assert await service.list_artifact_keys(**_in()) == []
    assert await service.list_artifact_keys(app_name="app", user_id="u") == []


@pytest.mark.parametrize("version", ["1", 1.0, True])
async def test_a_version_that_is_not_an_int_is_refused(
    service: BaseArtifactService, version: Any
) -> None:
    await service.save_artifact(**_in(), filename="f", artifact=_text("x"))
    with pytest.raises(InvalidArtifactError, match="version is an int"):
        await service.load_artifact(**_in(), filename="f", version=version)


async def test_loading_a_session_name_without_a_session_is_refused(
    service: BaseArtifactService,
) -> None:
    with pytest.raises(InvalidArtifactError, match="'user:draft'"):
        await service.load_artifact(app_name="app", user_id="u", filename="draft")


async def test_concurrent_saves_from_several_stores_get_distinct_versions(
    stores: StoreFactory,
) -> None:
    services = [BaseArtifactService(stores.open()) for _ in range(3)]
    saves = [
        s.save_artifact(**_in(), filename="log", artifact=_text(f"{i}-{n}"))
        for i, s in enumerate(services)
        for n in range(4)
    ]
    versions = await asyncio.gather(*saves)

    assert sorted(versions) == list(range(12))
    texts = [
        (await services[0].load_artifact(**_in(), filename="log", version=v)) for v in range(12)
    ]
    assert sorted(t.text or "" for t in texts if t) == sorted(
        f"{i}-{n}" for i in range(3) for n in range(4)
    )
