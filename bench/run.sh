#!/usr/bin/env bash
# `make bench`: baton's figures, then google-adk's and LangGraph's from bench/.venv
# (a separate venv: baton never imports them), side by side in bench/results.md;
# then baton's recovery and deadline figures (real processes, a few minutes), and
# baton on PostgreSQL against raw asyncpg floors; then HITL runs over HTTP; then pages of
# pending questions in a database of 10,000 open questions and 1,000,000 events.
#   bash bench/run.sh [--quick]     --quick: fewer runs, histories up to 1,000 events
set -u
cd "$(dirname "$0")/.."
args=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== baton" >&2
.venv/bin/python bench/baton_bench.py "${args[@]}" | tee "$out/baton.jsonl"
echo "== baton: recovery and deadlines" >&2
.venv/bin/python bench/recovery_bench.py "${args[@]}" | tee "$out/recovery.jsonl"
echo "== baton: PostgreSQL against its floor" >&2
.venv/bin/python bench/postgres_bench.py "${args[@]}" | tee "$out/postgres.jsonl"
echo "== baton: HITL runs over HTTP" >&2
.venv/bin/python bench/http_bench.py "${args[@]}" | tee "$out/http.jsonl"
echo "== baton: pending questions a page at a time" >&2
.venv/bin/python bench/paging_bench.py "${args[@]}" | tee "$out/paging.jsonl"

if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv || echo "bench: could not create bench/.venv; peers skipped" >&2
fi
if [ -x bench/.venv/bin/python ]; then
  # One install per peer, so one failing to install does not keep the other out.
  bench/.venv/bin/python -c "import google.adk" 2>/dev/null \
    || bench/.venv/bin/pip install --quiet google-adk aiosqlite \
    || echo "bench: pip could not install google-adk (see above)" >&2
  bench/.venv/bin/python -c "import langgraph.checkpoint.sqlite" 2>/dev/null \
    || bench/.venv/bin/pip install --quiet langgraph langgraph-checkpoint-sqlite \
    || echo "bench: pip could not install langgraph (see above)" >&2
  for peer in adk langgraph; do
    echo "== $peer" >&2
    bench/.venv/bin/python "bench/peers/${peer}_bench.py" "${args[@]}" \
      > >(tee "$out/$peer.jsonl") 2> "$out/$peer.err" \
      || echo "bench: $peer stopped: $(tail -n 1 "$out/$peer.err")" >&2
  done
fi

echo >&2
if [[ " ${args[*]} " == *" --quick "* ]]; then
  .venv/bin/python bench/report.py "$out"  # a smoke run: bench/results.md keeps the full figures
else
  .venv/bin/python bench/report.py "$out" --write bench/results.md
fi
