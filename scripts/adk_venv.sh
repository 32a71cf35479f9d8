#!/usr/bin/env bash
# Install the reference's google-adk into .venv-adk, once: its web UI's files are served
# against baton (scripts/adk_ui.py) and driven by tests/server/test_adk_ui.py. baton never
# imports it. When it cannot be installed (no network, no index), say so and exit 0: that
# test then skips with this message, and fails under CI=true.
set -u
cd "$(dirname "$0")/.."
VERSION=2.13.0
STAMP=.venv-adk/.installed-$VERSION
[ -f "$STAMP" ] && exit 0
echo "adk-ui-venv: installing google-adk==$VERSION into .venv-adk (once)" >&2
if python3 -m venv .venv-adk \
  && .venv-adk/bin/python -m pip install --quiet --disable-pip-version-check "google-adk==$VERSION" 2>.venv-adk.log; then
  touch "$STAMP"
  rm -f .venv-adk.log
else
  echo "adk-ui-venv: google-adk could not be installed (see .venv-adk.log); the reference UI test will skip." >&2
fi
exit 0
