"""How `Runner.run_debug` prints a run's events: each author's text, and with
`verbose` its tool calls, tool results, code and files, one line each, as the
reference's `run_debug` prints them."""

from __future__ import annotations

from typing import Final

from baton.events import Event
from baton.types import Part

_ARGS_PREVIEW: Final = 50  # characters of a tool call's arguments shown
_RESULT_PREVIEW: Final = 100  # of a tool's result or a code run's output


def print_event(event: Event, *, verbose: bool = False) -> None:
    """Print `event`'s message: consecutive texts as one `author > text` line; thoughts,
    tool calls and the rest only when `verbose`."""
    texts: list[str] = []
    parts = event.content.parts if event.content else None
    for part in parts or []:
        if part.thought and not verbose:
            continue
        if part.text:
            texts.append(part.text)
            continue
        _print_text(event.author, texts)
        if verbose and (shown := _describe(part)):
            print(f"{event.author} > {shown}")
    _print_text(event.author, texts)


def _print_text(author: str, texts: list[str]) -> None:
    if texts:
        print(f"{author} > {''.join(texts)}")
        texts.clear()


def _describe(part: Part) -> str | None:
    if part.function_call:
        args = _cut(str(part.function_call.args), _ARGS_PREVIEW)
        return f"[Calling tool: {part.function_call.name}({args})]"
    if part.function_response:
        return f"[Tool result: {_cut(str(part.function_response.response), _RESULT_PREVIEW)}]"
    if part.executable_code:
        return f"[Executing {part.executable_code.language or 'code'} code...]"
    if part.code_execution_result:
        output = part.code_execution_result.output or "result"
        return f"[Code output: {_cut(output, _RESULT_PREVIEW)}]"
    if part.inline_data:
        return f"[Inline data: {part.inline_data.mime_type or 'data'}]"
    if part.file_data:
        return f"[File: {part.file_data.file_uri or 'file'}]"
    return None


def _cut(text: str, limit: int) -> str:
    return text[:limit] + "..." if len(text) > limit else text
