"""baton's HTTP/SSE server, its web inbox, and the app catalog the CLI shares.

Nothing here imports FastAPI at package import time, so `baton run` works
without the `server` extra; `baton.server.app` needs it.
"""
