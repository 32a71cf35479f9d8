"""The configs of Gemini's built-in tools, as `types.Tool` holds them
(`types.Tool(google_search=types.GoogleSearch())`): the model runs such a tool itself.

They are here so that code written for the reference builds its requests unchanged and a
model that speaks Gemini's own protocol (a `BaseLlm` of the user's) receives them. baton's
chat-completions models refuse a request holding one, naming the tool and the model
(`baton.models.chat_completions`): that protocol has no place for them. A nested config
the reference types in detail (a Vertex AI Search datastore, an auth config) is a JSON
object here, with the reference's field names.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import JsonValue

from baton.wire_model import StrictWireModel
from baton.wire_repr import ReferenceRepr

__all__ = [
    "ComputerUse",
    "DynamicRetrievalConfig",
    "EnterpriseWebSearch",
    "FileSearch",
    "GoogleMaps",
    "GoogleSearch",
    "GoogleSearchRetrieval",
    "Interval",
    "McpServer",
    "Retrieval",
    "ToolCodeExecution",
    "UrlContext",
]


class Interval(ReferenceRepr, StrictWireModel):
    """A span of time (`GoogleSearch.time_range_filter`)."""

    end_time: datetime | None = None
    start_time: datetime | None = None


class GoogleSearch(ReferenceRepr, StrictWireModel):
    """Google Search grounding: the model searches the web itself."""

    search_types: dict[str, JsonValue] | None = None
    blocking_confidence: str | None = None
    exclude_domains: list[str] | None = None
    time_range_filter: Interval | None = None


class ToolCodeExecution(ReferenceRepr, StrictWireModel):
    """Code execution: the model runs the code it writes itself."""


class UrlContext(ReferenceRepr, StrictWireModel):
    """URL context: the model reads the URLs in the conversation itself."""


class EnterpriseWebSearch(ReferenceRepr, StrictWireModel):
    """Enterprise Web Search grounding."""

    blocking_confidence: str | None = None
    exclude_domains: list[str] | None = None


class DynamicRetrievalConfig(ReferenceRepr, StrictWireModel):
    """When Google Search retrieval is used (`mode`, `dynamic_threshold`)."""

    dynamic_threshold: float | None = None
    mode: str | None = None


class GoogleSearchRetrieval(ReferenceRepr, StrictWireModel):
    """Google Search retrieval (Gemini 1.x's search grounding)."""

    dynamic_retrieval_config: DynamicRetrievalConfig | None = None


class Retrieval(ReferenceRepr, StrictWireModel):
    """Grounding in a Vertex AI Search datastore, a RAG store or an external API."""

    disable_attribution: bool | None = None
    external_api: dict[str, JsonValue] | None = None
    vertex_ai_search: dict[str, JsonValue] | None = None
    vertex_rag_store: dict[str, JsonValue] | None = None


class GoogleMaps(ReferenceRepr, StrictWireModel):
    """Google Maps grounding."""

    auth_config: dict[str, JsonValue] | None = None
    enable_widget: bool | None = None
    grounding_types: dict[str, JsonValue] | None = None


class ComputerUse(ReferenceRepr, StrictWireModel):
    """Computer use: the model drives a browser or a desktop."""

    environment: str | None = None
    excluded_predefined_functions: list[str] | None = None
    enable_prompt_injection_detection: bool | None = None
    disabled_safety_policies: list[str] | None = None


class FileSearch(ReferenceRepr, StrictWireModel):
    """Search in Gemini file-search stores."""

    file_search_store_names: list[str] | None = None
    top_k: int | None = None
    metadata_filter: str | None = None


class McpServer(ReferenceRepr, StrictWireModel):
    """An MCP server the model calls itself (`streamable_http_transport`: its URL and
    headers)."""

    name: str | None = None
    streamable_http_transport: dict[str, JsonValue] | None = None
