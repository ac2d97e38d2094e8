"""Append cost against inbox history: agentteams with archiving, agentteams without it,
and Claude Code's rewrite-everything (stdlib json, written in place, as writeFileSync)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from benchmarks.common import env, percentiles, scratch
from ipc import Mailbox, TeamConfigStore
from ipc.clock import now_iso
from ipc.locks import locked

TEXT = "y" * 240


def _history(mb: Mailbox, size: int) -> None:
    for start in range(0, size, 100):
        for i in range(start, min(size, start + 100)):
            mb.append(sender="bob", text=f"{i} {TEXT}")
        mb.mark_all_read()


def agentteams(size: int, samples: int, archive: bool) -> list[float]:
    with scratch() as root, env(AGENTTEAMS_INBOX_ARCHIVE_AFTER="200" if archive else "100000000"):
        store = TeamConfigStore(root, "g")
        store.create()
        store.add_member("sink")
        mb = Mailbox(root, "g", "sink")
        _history(mb, size)
        out = []
        for i in range(samples):
            t0 = time.perf_counter()
            mb.append(sender="bob", text=f"new {i} {TEXT}")
            out.append((time.perf_counter() - t0) * 1e3)
        return out


def claude_code(size: int, samples: int) -> list[float]:
    """Claude Code 2.1.38's append: lock, JSON.parse the whole array, push, stringify, write in place."""
    with scratch() as root:
        path = Path(root) / "sink.json"
        history = [
            {"from": "bob", "text": f"{i} {TEXT}", "timestamp": now_iso(), "read": True} for i in range(size)
        ]
        path.write_text(json.dumps(history, indent=2))
        out = []
        for i in range(samples):
            t0 = time.perf_counter()
            with locked(path, root=Path(root)):
                messages = json.loads(path.read_text())
                messages.append(
                    {"from": "bob", "text": f"new {i} {TEXT}", "timestamp": now_iso(), "read": False}
                )
                path.write_text(json.dumps(messages, indent=2))
            out.append((time.perf_counter() - t0) * 1e3)
        return out


def run(quick: bool) -> dict[str, Any]:
    sizes = (0, 10, 100, 1000) if quick else (0, 10, 100, 1000, 10_000)
    samples = 30 if quick else 100
    rows: list[dict[str, Any]] = []
    for size in sizes:
        for label, values in (
            ("agentteams (archive past 200 read)", agentteams(size, samples, archive=True)),
            ("agentteams, no archive", agentteams(size, samples, archive=False)),
            ("Claude Code rewrite-everything", claude_code(size, samples)),
        ):
            rows.append({"method": label, "history": size, **percentiles(values)})
    base = next(r for r in rows if r["history"] == 0 and r["method"].startswith("agentteams (archive"))
    top = max((r for r in rows if r["method"].startswith("agentteams (archive")), key=lambda r: r["history"])
    ratio = top["p50"] / base["p50"]
    targets = [
        {
            "target": f"append at {top['history']:,} messages of history ≤ 1.5× empty",
            "value": ratio,
            "met": ratio <= 1.5,
        }
    ]
    return {"rows": rows, "targets": targets}
