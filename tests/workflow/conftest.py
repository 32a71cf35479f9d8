"""Fixtures for these tests."""

from tests.harness import make_harness as make_harness
