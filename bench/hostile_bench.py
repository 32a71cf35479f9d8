"""How a real `baton api_server` holds up while large bodies are refused (loopback only).

    .venv/bin/python bench/hostile_bench.py

Starts `baton api_server examples/` with an API key in a subprocess, then sends
30 MB and 100 MB bodies from a thread (once without a key: 401; once with it,
over the 8 MB limit: 413) while the main thread asks `/health` every 10 ms.
Prints, per upload: the refusal's status, how long the upload took, `/health`'s
median and worst latency during it, and the server's resident memory before and
after (from /proc). The suite asserts the behaviour (tests/server/test_slow_clients.py);
this records the figures.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).parents[1]


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else float("nan")


def upload(port: int, size: int, key: str | None) -> tuple[int, float]:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        auth = f"X-API-Key: {key}\r\n" if key else ""
        head = (
            f"POST /run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}"
            f"Content-Length: {size}\r\n\r\n"
        )
        sock.sendall(head.encode())
        chunk = b" " * (1024 * 1024)
        for _ in range(size // len(chunk)):
            sock.sendall(chunk)
        reply = sock.recv(65536)
    return int(reply.split(b" ")[1]), time.perf_counter() - started


def measure(port: int, pid: int, size_mb: int, key: str | None) -> dict[str, object]:
    before = rss_mb(pid)
    result: list[tuple[int, float]] = []
    thread = threading.Thread(target=lambda: result.append(upload(port, size_mb << 20, key)))
    latencies: list[float] = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        thread.start()
        while thread.is_alive():
            started = time.perf_counter()
            client.get("/health").raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.01)
        thread.join()
    status, seconds = result[0]
    return {
        "upload_mb": size_mb,
        "key": bool(key),
        "status": status,
        "upload_s": round(seconds, 3),
        "health_ms_median": round(statistics.median(latencies), 2),
        "health_ms_max": round(max(latencies), 2),
        "health_calls": len(latencies),
        "rss_mb_before": round(before, 1),
        "rss_mb_after": round(rss_mb(pid), 1),
    }


def main() -> None:
    exe = Path(sys.executable).parent / "baton"
    with tempfile.TemporaryDirectory() as tmp:
        args = [str(exe), "api_server", str(ROOT / "examples"), "--port", "0"]
        args += ["--api-key", "bench-key", "--db", f"{tmp}/s.db"]
        env = {**os.environ, "COLUMNS": "200"}
        with subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True) as server:
            try:
                assert server.stdout is not None
                found = re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline())
                assert found, "the server did not print its address"
                port = int(found.group(1))
                for size_mb in (30, 100):
                    for key in (None, "bench-key"):
                        print(json.dumps(measure(port, server.pid, size_mb, key)))
            finally:
                server.send_signal(signal.SIGINT)
                server.wait(timeout=20)


if __name__ == "__main__":
    main()
