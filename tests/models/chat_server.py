"""A small chat-completions server on 127.0.0.1 for testing the real OpenAI adapter.

It records every request body and answers with the replies queued by the test:
a completion dict, or (for streamed requests) a list of chunk dicts sent as SSE.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

Reply = dict[str, Any] | list[dict[str, Any]]


@dataclass
class ChatServer:
    """What the server received, and what it will answer next."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    headers: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    replies: list[Reply] = field(default_factory=list[Reply])

    def reply(self, reply: Reply) -> None:
        """Queue the answer to the next request."""
        self.replies.append(reply)


def completion(
    *,
    content: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A chat completion with one choice; tool calls are (id, name, arguments JSON)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "served-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """One streamed chunk."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "served-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            server.requests.append(json.loads(body))
            server.headers.append({k.lower(): v for k, v in self.headers.items()})
            if not server.replies:
                self._send(500, "application/json", b'{"error": {"message": "no reply queued"}}')
                return
            reply = server.replies.pop(0)
            if isinstance(reply, list):
                frames = [f"data: {json.dumps(c)}\n\n" for c in reply] + ["data: [DONE]\n\n"]
                self._send(200, "text/event-stream", "".join(frames).encode())
            else:
                self._send(200, "application/json", json.dumps(reply).encode())

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # Keep test output clean.

    return Handler


@contextmanager
def serve_chat() -> Iterator[ChatServer]:
    """Run the server on a free port for the duration of the block."""
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    host, port = cast(tuple[str, int], httpd.server_address)
    state.url = f"http://{host}:{port}/v1"
    # A short poll interval keeps shutdown (and so each test) fast.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
