from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from baton.models import OpenAiModel
from tests.models.chat_server import ChatServer, serve_chat


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with serve_chat() as server:
        yield server


@pytest.fixture
async def openai_model(chat_server: ChatServer) -> AsyncIterator[OpenAiModel]:
    model = OpenAiModel(
        model="openai/served-model", base_url=chat_server.url, api_key="k", max_retries=0
    )
    yield model
    await model.aclose()
