"""The soak across two hosts: one team on a real nats-server, two supervisors with their own
roots and host names on this machine, teammates on both; random DMs across hosts, tasks
created on either host, and the server killed -9 and restarted every so often. At the end
every message must have arrived exactly once, every task run once and completed.

    python tests/reliability/soak_hosts.py --seconds 300 --json out.json   (make soak-hosts)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ipc.engine import team as engine_team  # noqa: E402
from tests.engine_helpers import Engine, two_hosts  # noqa: E402
from tests.reliability.stopping import STOP, Interrupted  # noqa: E402


@dataclass
class HostsSoak:
    seconds: float
    teammates: int
    restarts: int = 0
    outage_seconds: float = 0.0
    messages_sent: int = 0
    lost: int = 0
    duplicated: int = 0
    tasks: int = 0
    tasks_ran_twice: int = 0
    tasks_stuck: int = 0
    send_errors: int = 0
    verdict: str = ""


def soak(seconds: float, per_host: int, restart_every: float, workdir: Path) -> HostsSoak:
    result = HostsSoak(seconds=seconds, teammates=2 * per_host)
    log = workdir / "ran.log"
    engine = Engine(workdir / "engine")
    engine.start()
    rng = random.Random(25)
    try:
        with two_hosts(workdir, engine, fallback_poll=5.0) as (a, b):
            names = {a: [a.spawn(f"a{i}", prompt="") for i in range(per_host)]}
            names[b] = [b.spawn(f"b{i}", prompt="") for i in range(per_host)]
            everyone = names[a] + names[b]
            sent: list[tuple[str, str]] = []
            stop = threading.Event()

            def restarts() -> None:
                while not stop.wait(restart_every * rng.uniform(0.7, 1.3)):
                    engine.kill()
                    down = rng.uniform(0.5, 3.0)
                    time.sleep(down)
                    engine.start()
                    result.restarts += 1
                    result.outage_seconds += down

            killer = threading.Thread(target=restarts, daemon=True)
            killer.start()
            deadline = time.monotonic() + seconds
            n = 0
            while time.monotonic() < deadline:
                n += 1
                host = a if n % 2 else b
                if n % 5 == 0:
                    host.tasks.create(f"soak task {n}", metadata={"command": f"echo task-{n} >> {log}"})
                    result.tasks += 1
                else:
                    sender, recipient = rng.sample(everyone, 2)
                    text = f"hosts-soak-{n} from {sender}"
                    try:
                        host.send(recipient, text, summary="soak", sender=sender)
                        sent.append((recipient, text))
                    except Exception as exc:  # counted: a send that gave up is reported, not hidden
                        print(f"send {n} failed: {exc}", file=sys.stderr)
                        result.send_errors += 1
                time.sleep(rng.uniform(0.01, 0.1))
            stop.set()
            killer.join(30)
            if engine.server is None:
                engine.start()
            result.messages_sent = len(sent)
            # Drain: every task done, every message where it was sent.
            drain = time.monotonic() + 120
            while time.monotonic() < drain and any(t.status != "completed" for t in a.tasks.list()):
                time.sleep(0.5)
            expected = Counter(sent)
            seen: Counter[tuple[str, str]] = Counter()
            for name in everyone:
                for message in a.inbox(name).read():
                    if message.text.startswith("hosts-soak-"):
                        seen[(name, message.text)] += 1
            result.lost = sum(1 for key in expected if seen[key] == 0)
            result.duplicated = sum(seen[key] - 1 for key in expected if seen[key] > 1)
            ran = Counter(log.read_text().split()) if log.exists() else Counter()
            result.tasks_ran_twice = sum(1 for v in ran.values() if v > 1)
            result.tasks_stuck = sum(1 for t in a.tasks.list() if t.status != "completed")
    finally:
        engine_team.close_all()
        engine.stop()
    ok = not (result.lost or result.duplicated or result.tasks_ran_twice or result.tasks_stuck)
    result.verdict = "ok" if ok else "FAILED"
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--per-host", type=int, default=2)
    parser.add_argument("--restart-every", type=float, default=30)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    STOP.install()  # SIGTERM, Ctrl-C: both hosts' teams and the nats-server go down, the directory goes
    try:
        with tempfile.TemporaryDirectory(prefix="agentteams-soak-hosts-") as tmp:
            result = soak(args.seconds, args.per_host, args.restart_every, Path(tmp))
    except Interrupted as stop:
        print(f"soak-hosts: stopped by {stop}; both hosts and the engine are down", file=sys.stderr)
        return 128 + stop.signum
    report = asdict(result)
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return 0 if result.verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
