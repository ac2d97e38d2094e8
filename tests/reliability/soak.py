"""The soak: teammates, random DMs, broadcasts, task creates and completions, and random
SIGKILLs, for a configurable time; then every message id must have arrived exactly once,
every task be completed or open with no owner, and the supervisor must not have grown.

    python tests/reliability/soak.py --seconds 600      (make soak)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ipc.mailbox import Mailbox  # noqa: E402
from supervisor import Team  # noqa: E402

ID = re.compile(r"soak-(\d+)")


@dataclass
class SoakResult:
    seconds: float
    teammates: int
    messages_sent: int = 0
    deliveries_expected: int = 0
    deliveries_seen: int = 0
    lost: int = 0
    duplicates: int = 0
    unread_left: int = 0
    kills: int = 0
    tasks: int = 0
    tasks_completed: int = 0
    tasks_open_unowned: int = 0
    tasks_stuck: list[str] = field(default_factory=list)
    lost_examples: list[str] = field(default_factory=list)
    supervisor_fds: tuple[int, int] = (0, 0)
    supervisor_rss_mib: tuple[float, float] = (0.0, 0.0)

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.duplicates == 0
            and not self.tasks_stuck
            and self.unread_left == 0
            and self.supervisor_fds[1] - self.supervisor_fds[0] <= 16
            and self.supervisor_rss_mib[1] - self.supervisor_rss_mib[0] <= 32
        )


def run_soak(seconds: float, teammates: int = 8, seed: int = 1, root: Path | None = None) -> SoakResult:
    rng = random.Random(seed)
    root = root or Path(tempfile.mkdtemp(prefix="agentteams-soak-"))
    team = Team.create("soak", root=root, cwd=str(root))
    team.up(restart="on-failure", intensity=10_000, period=60.0)
    result = SoakResult(seconds=seconds, teammates=teammates)
    expected: Counter[tuple[str, int]] = Counter()  # (recipient, message id)
    try:
        names = [team.spawn(f"w{i}", prompt="Soak: work the task list.") for i in range(teammates)]
        sup = psutil.Process(team.supervisor_pid() or 0)
        time.sleep(1.0)
        result.supervisor_fds = (sup.num_fds(), 0)
        result.supervisor_rss_mib = (sup.memory_info().rss / 2**20, 0.0)
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            n += 1
            action = rng.random()
            if action < 0.45:
                target = rng.choice(names)
                team.send(target, f"soak-{n} hello", summary=f"soak {n}")
                expected[(target, n)] += 1
                result.messages_sent += 1
            elif action < 0.55:
                sender = rng.choice(names)
                response = team.broadcast(f"soak-{n} to all", summary=f"soak {n}", sender=sender)
                for recipient in response["recipients"]:
                    expected[(recipient, n)] += 1
                result.messages_sent += 1
            elif action < 0.85:
                team.tasks.create(
                    f"soak task {n}", metadata={"command": f"sleep {rng.choice([0, 0, 0.05, 0.2])}"}
                )
                team.wake("*")
                result.tasks += 1
            elif action < 0.9:
                victims = [m for m in team.status().teammates if m.pid]
                if victims:
                    os.kill(rng.choice(victims).pid or 0, signal.SIGKILL)
                    result.kills += 1
            time.sleep(rng.uniform(0.005, 0.05))
        settle(team, names)
        result.supervisor_fds = (result.supervisor_fds[0], sup.num_fds())
        result.supervisor_rss_mib = (result.supervisor_rss_mib[0], sup.memory_info().rss / 2**20)
        check(team, names, expected, result)
    finally:
        team.down(grace=3)
    return result


def settle(team: Team, names: list[str], timeout: float = 120.0) -> None:
    """Wait until every teammate is up and idle, nothing is unread and no task is in flight."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [m.state for m in team.status().teammates]
        unread = sum(len(Mailbox(team.root, team.name, n).unread()) for n in names)
        busy = [t for t in team.tasks.list() if t.status == "in_progress"]
        claimable = team.tasks.find_claimable()
        if all(s == "idle" for s in states) and not unread and not busy and claimable is None:
            return
        team.wake("*")
        time.sleep(0.5)


def check(team: Team, names: list[str], expected: Counter[tuple[str, int]], result: SoakResult) -> None:
    seen: Counter[tuple[str, int]] = Counter()
    for name in [*names, "team-lead"]:
        mailbox = Mailbox(team.root, team.name, name)
        for message in mailbox.history():
            match = ID.match(message.text)
            if match:
                seen[(name, int(match.group(1)))] += 1
        if name != "team-lead":  # the lead's plain messages wait for a person, by design
            result.unread_left += len(mailbox.unread())
    result.deliveries_expected = sum(expected.values())
    result.deliveries_seen = sum(seen.values())
    result.lost = sum(max(0, count - seen[key]) for key, count in expected.items())
    result.lost_examples = [f"{k[1]}→{k[0]}" for k, c in expected.items() if seen[k] < c][:10]
    result.duplicates = sum(max(0, count - expected[key]) for key, count in seen.items())
    for task in team.tasks.list():
        if task.status == "completed":
            result.tasks_completed += 1
        elif task.status == "pending" and task.owner_name is None:
            result.tasks_open_unowned += 1
        else:
            result.tasks_stuck.append(f"#{task.id} {task.status} {task.owner_name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--teammates", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    result = run_soak(args.seconds, args.teammates, args.seed)
    print(json.dumps({**asdict(result), "ok": result.ok}, indent=1))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
