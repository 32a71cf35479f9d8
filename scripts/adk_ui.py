"""Serve the reference's web UI (from an installed google-adk) against a baton server.

The UI is the Angular app shipped inside the `google-adk` package
(`google/adk/cli/browser/`). It reads the address of its backend from
`assets/config/runtime-config.json`, which the reference's own server writes; this
script serves the UI's files as they are and answers that one file with `--backend`.
It only reads files: nothing of google-adk is imported.

    make adk-ui                       # creates .venv-adk (google-adk) once, then runs this
    python scripts/adk_ui.py --backend http://127.0.0.1:8000 --port 8001

The baton server must allow the UI's origin: `baton api_server examples/
--allow-origin http://127.0.0.1:8001`.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG_PATH = "/assets/config/runtime-config.json"


def find_ui(venv: Path) -> Path | None:
    """The UI's folder inside the google-adk installed in `venv`, if there is one."""
    for found in sorted(venv.glob("lib/python*/site-packages/google/adk/cli/browser")):
        if (found / "index.html").is_file():
            return found
    return None


class UiHandler(SimpleHTTPRequestHandler):
    """The UI's files, and its runtime config pointing at the backend."""

    config: bytes = b"{}"

    def do_GET(self) -> None:
        if self.path.split("?")[0] == CONFIG_PATH:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(self.config)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(self.config)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: one line per file would drown the baton server's output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="http://127.0.0.1:8000", help="baton's URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--ui-dir", type=Path, help="the UI folder (default: .venv-adk's)")
    args = parser.parse_args(argv)
    ui = args.ui_dir or find_ui(ROOT / ".venv-adk")
    if ui is None or not (ui / "index.html").is_file():
        print(
            "adk_ui: no UI folder found; run `make adk-ui-venv` (installs google-adk into "
            ".venv-adk) or pass --ui-dir .../google/adk/cli/browser",
            file=sys.stderr,
        )
        return 2
    config = {"backendUrl": args.backend.rstrip("/"), "telemetry": False}
    handler = type("Handler", (UiHandler,), {"config": json.dumps(config).encode()})
    serve_files = functools.partial(handler, directory=str(ui))
    server = ThreadingHTTPServer((args.host, args.port), serve_files)
    host, port = server.server_address[:2]
    print(f"reference UI at http://{host}:{port}/ (backend {config['backendUrl']})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
