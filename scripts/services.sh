#!/usr/bin/env bash
# Start the local PostgreSQL server when it is installed but stopped.
# Where none is installed, the PostgreSQL tests skip with a message (and fail under CI=true).
set -u
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "services: PostgreSQL is not installed; its tests will be skipped." >&2
  exit 0
fi
if pg_isready -q -h 127.0.0.1 -p 5432; then
  exit 0
fi
echo "services: starting PostgreSQL" >&2
for version in $(ls /etc/postgresql 2>/dev/null); do
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
done
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p 5432 && exit 0
  sleep 1
done
echo "services: PostgreSQL did not come up" >&2
exit 0
