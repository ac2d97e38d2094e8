"""Send → the recipient's turn starts, across processes, zmq against poll, with
the physical floors (in-process queue, AF_UNIX datagram, bare ZeroMQ PAIR) in one table."""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import zmq

from benchmarks.common import env, percentiles, prefill, scratch, team_of
from ipc import TeamConfigStore, ed25519, trace
from ipc import trust as ipc_trust
from ipc.mailbox import Mailbox, new_message
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME

SPACED = 0.010  # the pause before each send in spaced-out traffic


def system(
    teammates: int,
    wake: str,
    pause: float,
    inbox: int,
    samples: int,
    teammate_mode: str = "process",
    probe: Callable[[Any], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Send → the recipient's turn starts (the message taken, marked read, handed to its
    model), traced per message, with where the time went. ``probe`` measures the running
    team before the samples (its figures go in the row)."""
    archive = "1000000" if inbox >= 1000 else "200"  # keep a long inbox long for the measurement
    with (
        scratch() as root,
        env(AGENTTEAMS_INBOX_ARCHIVE_AFTER=archive, AGENTTEAMS_TRACE="1"),
        team_of(root, teammates, wake=wake, teammate_mode=teammate_mode) as (team, names),
    ):
        probed = probe(team) if probe is not None else {}
        target = names[0]
        prefill(team, target, inbox)
        team.send(target, "warm-up", summary="warm-up")
        time.sleep(0.6 if wake == "poll" else 0.05)
        seen = {s.msg_id for s in trace.spans(team.paths)}
        for i in range(samples):
            team.send(target, f"sample {i}", summary="latency sample")
            if pause:
                time.sleep(pause)
            elif wake == "zmq":
                # Continuous, closed loop: the next send as soon as this one was taken, so the
                # figure is latency back to back, not the queue an open-loop sender would build.
                _wait_taken(team, seen, i + 1, timeout=5)
        _wait_taken(team, seen, samples, timeout=15)
        spans = _taken(team, seen)
    values = [s.latency_ms for s in spans]
    row: dict[str, Any] = {
        "path": "agentteams",
        "wake": wake,
        "teammates": teammates,
        "traffic": "spaced" if pause else "continuous",
        "inbox": inbox,
        **percentiles(values),
    }
    row["stages_ms"] = stages(spans)
    row.update(probed)
    row["lost"] = samples - len(values)
    row["values"] = values
    return row


def stages(spans: list[trace.Span]) -> dict[str, float]:
    """Median of each stage: the sender's inbox write, its wake, the wake reaching the
    recipient, the recipient's take (read + mark read)."""

    def median(values: list[float]) -> float:
        return percentiles(values)["p50"]

    return {
        "write": median([(s.written - s.sent) / 1e6 for s in spans if s.written]),
        "wake_send": median([(s.wake_sent - s.written) / 1e6 for s in spans if s.wake_sent]),
        "wake": median([(s.woke - s.wake_sent) / 1e6 for s in spans if s.woke and s.wake_sent]),
        "take": median([(s.taken - s.woke) / 1e6 for s in spans if s.woke]),
    }


def _taken(team: Any, seen: set[str]) -> list[trace.Span]:
    return [s for s in trace.spans(team.paths) if s.msg_id not in seen and s.sent and s.taken]


def _wait_taken(team: Any, seen: set[str], count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(_taken(team, seen)) < count and time.monotonic() < deadline:
        time.sleep(0.0002)


def floor_queue(samples: int, pause: float) -> list[float]:
    """Hand-off between two threads through queue.Queue, ping-pong (one way = half a round trip)."""
    ping: queue.Queue[int] = queue.Queue()
    pong: queue.Queue[int] = queue.Queue()

    def echo() -> None:
        for _ in range(samples):
            pong.put(ping.get())

    thread = threading.Thread(target=echo)
    thread.start()
    out = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        ping.put(t0)
        pong.get()
        out.append((time.perf_counter_ns() - t0) / 2e6)
        if pause:
            time.sleep(pause)
    thread.join()
    return out


def floor_unix_dgram(samples: int, pause: float) -> list[float]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    pid = os.fork()
    if pid == 0:
        a.close()
        for _ in range(samples):
            b.send(b.recv(64))
        os._exit(0)
    b.close()
    out = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        a.send(b"x")
        a.recv(64)
        out.append((time.perf_counter_ns() - t0) / 2e6)  # one way
        if pause:
            time.sleep(pause)
    os.waitpid(pid, 0)
    a.close()
    return out


def floor_zmq_pair(samples: int, pause: float) -> list[float]:
    with scratch() as root:
        endpoint = f"ipc://{root}/pair.sock"
        pid = os.fork()  # before any context exists in this process
        if pid == 0:
            ctx = zmq.Context()
            sock = ctx.socket(zmq.PAIR)
            sock.bind(endpoint)
            for _ in range(samples + 1):
                sock.send(sock.recv())
            sock.close(0)
            ctx.term()
            os._exit(0)
        ctx = zmq.Context()
        sock = ctx.socket(zmq.PAIR)
        sock.connect(endpoint)
        sock.send(b"warm")
        sock.recv()
        out = []
        for _ in range(samples):
            t0 = time.perf_counter_ns()
            sock.send(b"x")
            sock.recv()
            out.append((time.perf_counter_ns() - t0) / 2e6)
            if pause:
                time.sleep(pause)
        sock.close(0)
        ctx.term()
        os.waitpid(pid, 0)
    return out


def trust_cost(samples: int) -> list[dict[str, Any]]:
    """The file and signature work of send → turn, in-process and one stage at a time (the
    rows above time the stages across processes): the sender signs an entry and appends it
    (both locks, in place), the reader takes it (both locks, the file read and parsed, the
    flag flipped in place) and verifies it (the config looked up, the signature checked).
    Also a take from an inbox keeping 190 read messages (a take should not cost more for
    them), and a look at an inbox with nothing unread (what a teammate rung for a task, or
    on its fallback poll, pays before it looks at the task list)."""
    labels = ("sign", "inbox append", "inbox take", "verify", "sign + verify")
    timings: dict[str, list[float]] = {label: [] for label in labels}
    timings.update({"inbox take, 190 kept": [], "inbox look, nothing unread": []})
    with scratch() as root:
        store = TeamConfigStore(root, "bench")
        store.create("trust cost", cwd=str(root))
        for name in ("worker", "reader", "keeper"):
            store.add_member(name)
        paths = TeamPaths(root, "bench")
        key = ipc_trust.new_key()
        store.set_key("worker", ipc_trust.public_text(key, 0))
        ipc_trust.keyring.install(paths, "worker", key)
        reader = ipc_trust.Verifier(store, LEAD_NAME)
        box, long = Mailbox.at(paths, "reader"), Mailbox.at(paths, "keeper")
        prefill_box(box, 10)
        prefill_box(long, 190)
        for i in range(samples):
            t0 = time.perf_counter_ns()
            message = new_message("worker", f"sample {i}", "latency sample", "blue", paths=paths)
            t1 = time.perf_counter_ns()
            box.append_message(message)
            t2 = time.perf_counter_ns()
            (taken,) = box.take(lambda unread: 0)
            t3 = time.perf_counter_ns()
            check = reader.check(taken)
            t4 = time.perf_counter_ns()
            assert check.status == ipc_trust.VERIFIED and box.take(lambda unread: 0) == []
            t5 = time.perf_counter_ns()
            long.append_message(message)
            t6 = time.perf_counter_ns()
            assert long.take(lambda unread: 0)
            t7 = time.perf_counter_ns()
            if i % 150 == 149:  # keep the inbox as short as the rows' (no archiving pass)
                box.clear()
                prefill_box(box, 10)
            if i % 9 == 8:  # 190 read, never past the 200 that start an archiving pass
                long.clear()
                prefill_box(long, 190)
            for label, ns in zip(
                timings,
                (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t1 - t0 + t4 - t3, t7 - t6, t5 - t4),
                strict=True,
            ):
                timings[label].append(ns / 1e6)
    return [
        {
            "path": f"trust: {label}" if "inbox" not in label else label,
            "wake": "-",
            "teammates": 0,
            "traffic": "in-process",
            "inbox": (190 if "190" in label else 10) if "inbox" in label else 0,
            **percentiles(values),
            "lost": 0,
            "values": values,
        }
        for label, values in timings.items()
    ]


def prefill_box(box: Mailbox, count: int) -> None:
    for i in range(count):
        box.append_message(new_message("worker", f"earlier {i}", "prefill", "blue"))
    box.take(lambda unread: 0, limit=count)


def run(quick: bool) -> dict[str, Any]:
    load = os.getloadavg()  # how busy the machine was: other work inflates every figure here
    rows: list[dict[str, Any]] = []
    n_floor = 200 if quick else 2000
    for label, fn in (
        ("in-process queue", floor_queue),
        ("AF_UNIX datagram", floor_unix_dgram),
        ("bare ZeroMQ PAIR", floor_zmq_pair),
    ):
        for pause in (0.0, SPACED):
            values = fn(n_floor if not pause else n_floor // 10, pause)
            rows.append(
                {
                    "path": f"floor: {label}",
                    "wake": "-",
                    "teammates": 0,
                    "traffic": "spaced" if pause else "continuous",
                    "inbox": 0,
                    **percentiles(values),
                    "lost": 0,
                    "values": values,
                }
            )
    if quick:
        plan = [
            (1, "zmq", SPACED, 10, 40),
            (4, "zmq", SPACED, 10, 40),
            (1, "zmq", 0.0, 10, 40),
            (1, "poll", SPACED, 10, 16),
        ]
    else:
        plan = []
        for n in (1, 4, 16, 64):
            plan += [(n, "zmq", SPACED, 10, 300), (n, "zmq", 0.0, 10, 300)]
        plan += [(16, "zmq", SPACED, 1000, 300), (16, "zmq", 0.0, 1000, 300)]
        plan += [(1, "poll", SPACED, 10, 60), (16, "poll", SPACED, 10, 60), (16, "poll", SPACED, 1000, 60)]
    for teammates, wake, pause, inbox, samples in plan:
        rows.append(system(teammates, wake, pause, inbox, samples))
    rows += trust_cost(200 if quick else 5000)
    loads = {"before": load, "after": os.getloadavg()}
    return {"rows": rows, "targets": targets(rows), "load_average": loads, "signatures": ed25519.backend()}


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def find(**kw: Any) -> dict[str, Any] | None:
        matches = [r for r in rows if all(r.get(k) == v for k, v in kw.items())]
        return max(matches, key=lambda r: r["teammates"]) if matches else None

    zmq_row = find(path="agentteams", wake="zmq", traffic="spaced", inbox=10, teammates=16) or find(
        path="agentteams", wake="zmq", traffic="spaced", inbox=10
    )
    poll_row = find(path="agentteams", wake="poll", traffic="spaced", inbox=10)
    trust_row = find(path="trust: sign + verify")
    floor = find(path="floor: bare ZeroMQ PAIR", traffic="spaced")
    out = []
    if zmq_row:
        label = f"zmq, spaced, {zmq_row['teammates']} idle teammates"
        out += [
            {
                "target": f"send → turn starts p50 ≤ 1 ms, must ({label})",
                "value": zmq_row["p50"],
                "met": zmq_row["p50"] <= 1.0,
            },
            {
                "target": f"send → turn starts p50 ≤ 0.5 ms, goal ({label})",
                "value": zmq_row["p50"],
                "met": zmq_row["p50"] <= 0.5,
            },
            {
                "target": f"send → turn starts p99 ≤ 2 ms ({label})",
                "value": zmq_row["p99"],
                "met": zmq_row["p99"] <= 2.0,
            },
        ]
        if floor:
            ratio = zmq_row["p50"] / floor["p50"] if floor["p50"] else float("inf")
            out.append(
                {
                    "target": "stretch: p50 within 3× of the bare ZeroMQ PAIR floor (ratio)",
                    "value": ratio,
                    "met": ratio <= 3,
                }
            )
            out.append(
                {
                    "target": "p50 within 1.5× of the bare ZeroMQ PAIR floor (ratio)",
                    "value": ratio,
                    "met": ratio <= 1.5,
                }
            )
        # Closed-loop traffic against spaced traffic to as many teammates.
        steady = find(path="agentteams", wake="zmq", traffic="continuous", inbox=10)
        spaced = None
        if steady:
            spaced = find(
                path="agentteams", wake="zmq", traffic="spaced", inbox=10, teammates=steady["teammates"]
            )
        if steady and spaced:
            ratio = steady["p50"] / spaced["p50"] if spaced["p50"] else float("inf")
            out.append(
                {
                    "target": "continuous traffic no slower than spaced: p50 ratio ≤ 1",
                    "value": ratio,
                    "met": ratio <= 1.0,
                }
            )
        if trust_row:
            share = trust_row["p50"] / zmq_row["p50"] if zmq_row["p50"] else float("inf")
            out.append(
                {
                    "target": "signing + verifying a message p50 ≤ 1/4 of send → turn p50 (share)",
                    "value": share,
                    "met": share <= 0.25,
                }
            )
        if poll_row:
            ratio = poll_row["p50"] / zmq_row["p50"] if zmq_row["p50"] else float("inf")
            out.append(
                {
                    "target": "p50 ≥ 500× lower than the 500 ms poll, same run (ratio)",
                    "value": ratio,
                    "met": ratio >= 500,
                }
            )
            out.append(
                {
                    "target": "p50 ≥ 1,000× lower than the 500 ms poll, same run (ratio)",
                    "value": ratio,
                    "met": ratio >= 1000,
                }
            )
    return out
