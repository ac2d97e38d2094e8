"""Memory tracing for long runs: with ``AGENTTEAMS_TRACEMALLOC=DIR`` set, a process records a
tracemalloc snapshot into DIR every ``AGENTTEAMS_TRACEMALLOC_EVERY`` seconds (default 30), so
that growth found by the soak can be traced to the line that allocates it."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path


def start(role: str) -> None:
    directory = os.environ.get("AGENTTEAMS_TRACEMALLOC")
    if not directory:
        return
    every = float(os.environ.get("AGENTTEAMS_TRACEMALLOC_EVERY", "30"))
    tracemalloc.start(8)

    def record() -> None:
        n = 0
        while True:
            time.sleep(every)
            n += 1
            path = Path(directory) / f"{role}-{os.getpid()}-{n:04d}.snap"
            tracemalloc.take_snapshot().dump(str(path))

    threading.Thread(target=record, name="memtrace", daemon=True).start()
