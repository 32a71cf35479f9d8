"""The serving commands freeze what they loaded at start, out of the collector's way."""

from __future__ import annotations

import subprocess
import sys

# In a process of its own: freezing changes the collector of the whole process.
_SCRIPT = """
import gc, weakref
from baton.cli.serving import settle_heap

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)

before = cycle()  # garbage from before: collected by settle_heap, not frozen
settle_heap()
print(before() is None, gc.get_freeze_count() > 10_000, gc.get_threshold()[0])
after = cycle()  # garbage made while serving: still collected
gc.collect()
print(after() is None)
"""


def test_settle_heap_freezes_startup_objects_and_still_collects_later_cycles() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    assert ran.stdout.split() == ["True", "True", "5000", "True"]
