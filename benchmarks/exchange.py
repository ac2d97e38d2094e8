"""Exchanges through real turns: round trips per second between two teammates (a ping volley,
each hop a full turn: inbox, wake, model, SendMessage, idle notification), and fan-in, N
teammates each sending K messages to the lead at once."""

from __future__ import annotations

import time
from typing import Any

from benchmarks.common import scratch, team_of
from benchmarks.models import PING_MODEL
from ipc.mailbox import Mailbox


def _lead_texts(team: Any, prefix: str) -> list[str]:
    return [m.text for m in Mailbox(team.root, team.name, "team-lead").history() if m.text.startswith(prefix)]


def round_trips(wake: str, volley: int, timeout: float = 120.0) -> dict[str, Any]:
    with scratch() as root, team_of(root, 2, model=PING_MODEL, wake=wake) as (team, names):
        a, b = names
        t0 = time.perf_counter()
        # In a's name from here: it cannot be signed as a's, so it goes marked as a person's
        # (delivered, shown unverified); the volley after it is signed by each teammate.
        team.send(b, f"[ping {volley * 2}]", summary="ping", sender=a)
        deadline = time.monotonic() + timeout
        while not _lead_texts(team, "[ping done]") and time.monotonic() < deadline:
            time.sleep(0.002)
        elapsed = time.perf_counter() - t0
        done = bool(_lead_texts(team, "[ping done]"))
    return {
        "wake": wake,
        "round_trips": volley,
        "seconds": elapsed,
        "round_trips_per_s": volley / elapsed if done else 0.0,
        "completed": done,
    }


def fan_in(wake: str, senders: int, each: int, timeout: float = 120.0) -> dict[str, Any]:
    with scratch() as root, team_of(root, senders, model=PING_MODEL, wake=wake) as (team, _):
        t0 = time.perf_counter()
        team.broadcast(f"[burst {each}]", summary="burst")
        deadline = time.monotonic() + timeout
        while len(_lead_texts(team, "[burst-item")) < senders * each and time.monotonic() < deadline:
            time.sleep(0.005)
        elapsed = time.perf_counter() - t0
        got = _lead_texts(team, "[burst-item")
    return {
        "wake": wake,
        "senders": senders,
        "each": each,
        "received": len(got),
        "unique": len(set(got)),
        "seconds": elapsed,
        "messages_per_s": len(got) / elapsed,
    }


def run(quick: bool) -> dict[str, Any]:
    volley = 20 if quick else 100
    rtt = [round_trips("zmq", volley), round_trips("poll", 4 if quick else 10)]
    fans = [fan_in("zmq", n, 10 if quick else 25) for n in ((4,) if quick else (1, 4, 16))]
    zmq_rtt, poll_rtt = rtt
    ratio = (
        zmq_rtt["round_trips_per_s"] / poll_rtt["round_trips_per_s"]
        if poll_rtt["round_trips_per_s"]
        else float("inf")
    )
    return {
        "round_trips": rtt,
        "fan_in": fans,
        "targets": [
            {
                "target": "round trips between two teammates: zmq ≫ poll (same run)",
                "value": ratio,
                "met": ratio >= 50,
            },
            {
                "target": "fan-in: every message to the lead arrives exactly once",
                "value": float(sum(f["unique"] for f in fans)),
                "met": all(f["received"] == f["unique"] == f["senders"] * f["each"] for f in fans),
            },
        ],
    }
