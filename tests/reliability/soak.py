"""The soak: teammates, random DMs, broadcasts, task creates and completions, and random
SIGKILLs, for a configurable time; then every message id must have arrived exactly once and
every task be completed or open with no owner.

Every ``--sample`` seconds it records the supervisor's and each teammate's RSS and what a
message costs (the sender's call, the supervisor's CPU per message, a look at the lead's
inbox), and the fork server's RSS (every restarted teammate starts as a copy of it). After the
warm-up (the first five minutes, or a quarter of a shorter run) memory and cost must stay
flat: the supervisor's and the fork server's RSS within 2 MiB, every teammate's within 2 MiB
between its restarts, a restarted teammate's size when first seen within 2 MiB of what it was
early on (a restart must not cost more as history piles up), and each cost within 2x of where
it stood.

    python tests/reliability/soak.py --seconds 600 --json out.json --plot out.png   (make soak)

It runs in a new temporary root (/tmp/agentteams-soak-*, or under $TMPDIR), removed when the run
passes and kept, its path printed, when it fails. SIGTERM or SIGINT (Ctrl-C) brings the team down
and ends the run with 128 + the signal's number, the root kept.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ipc.inbox_scan import Cursor, identity, scan  # noqa: E402
from ipc.mailbox import Mailbox  # noqa: E402
from ipc.paths import remove_runtime_dirs  # noqa: E402
from ipc.replies import TeamStatus  # noqa: E402
from ipc.schemas import parse_body  # noqa: E402
from supervisor import Team  # noqa: E402
from tests.reliability.stopping import STOP, Interrupted  # noqa: E402

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
    warmup: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    growth: dict[str, float] = field(default_factory=dict)  # what the bounds were checked on
    too_much: list[str] = field(default_factory=list)  # bounds that were passed

    @property
    def ok(self) -> bool:
        """Nothing lost, duplicated, stuck or leaked."""
        return (
            self.lost == 0
            and self.duplicates == 0
            and not self.tasks_stuck
            and self.unread_left == 0
            and self.supervisor_fds[1] - self.supervisor_fds[0] <= 16
        )

    @property
    def flat(self) -> bool:
        """Memory and per-message cost stayed within their bounds after the warm-up."""
        return not self.too_much


@dataclass
class Sample:
    t: float  # seconds since the traffic started
    messages: int  # sent so far
    supervisor_rss_mib: float
    forkserver_rss_mib: float  # 0 when it is not running
    teammates_rss_mib: dict[str, float]  # "name/pid": each incarnation on its own
    send_ms: float  # mean Team.send/broadcast call in the interval
    supervisor_cpu_ms_per_message: float
    lead_check_us: float  # mean look at the lead's inbox in the interval
    lead_unread: int  # plain reports piling up for a person: the cost must not follow them
    # Where the machine's time went in the interval, per message: this process (the sends,
    # the kills), and the rest (the teammates, the fork server, anything else running);
    # and the share of all cores idle waiting on the disk.
    soak_cpu_ms_per_message: float = 0.0
    others_cpu_ms_per_message: float = 0.0
    iowait_percent: float = 0.0
    # The supervisor's RSS less its pages backed by files (code, shared libraries): the heap,
    # the interpreter's arenas, anything a leak grows. Reported beside the RSS, not bounded.
    supervisor_anon_mib: float = 0.0


class Sampler:
    """Takes a :class:`Sample` every ``every`` seconds from the traffic loop."""

    def __init__(
        self, team: Team, sup: psutil.Process, result: SoakResult, every: float, out: Path | None = None
    ) -> None:
        self.team, self.sup, self.result, self.every, self.out = team, sup, result, every, out
        self.started = time.monotonic()
        self.next = self.started + every
        self.send_seconds = 0.0
        self.sends = 0
        self.me = psutil.Process()
        self.last = self._counters(team.status())
        self.lead_inbox = Mailbox(team.root, team.name, "team-lead")
        self.lead_cursor = Cursor()
        self.lead_reports = 0

    def _counters(self, status: TeamStatus) -> tuple[int, float, int, float, float, float, float, float]:
        sup, me, machine = self.sup.cpu_times(), self.me.cpu_times(), psutil.cpu_times()
        iowait = getattr(machine, "iowait", 0.0)
        busy = sum(machine) - machine.idle - iowait
        return (
            self.result.messages_sent,
            sup.user + sup.system,
            status.lead_checks,
            status.lead_check_seconds,
            me.user + me.system,
            busy,
            iowait,
            sum(machine),
        )

    def _lead_reports(self) -> int:
        """The plain messages that reached the lead's inbox so far (the supervisor leaves them
        unread for a person), counted past a cursor as the supervisor looks: decoding the whole
        pile at every sample cost this process more the longer it ran. The cursor is anchored on
        the last of them, which an archiving pass keeps, so that pass is not counted again."""
        new, cursor = scan(self.lead_inbox, self.lead_cursor)
        reports = [e for e in new if parse_body(e.message.text) is None]
        if reports:
            cursor = replace(cursor, last=identity(reports[-1].message), last_raw=reports[-1].raw)
            self.lead_reports += len(reports)
        self.lead_cursor = cursor
        return self.lead_reports

    def timed_send(self, send: Callable[..., dict[str, Any]], *args: str, **kwargs: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        response = send(*args, **kwargs)
        self.send_seconds += time.perf_counter() - t0
        self.sends += 1
        return response

    def maybe_sample(self) -> None:
        if time.monotonic() >= self.next:
            self.sample()
            self.next += self.every

    def sample(self) -> None:
        status = self.team.status()
        now = self._counters(status)
        messages, cpu, checks, check_seconds, mine, busy, iowait, total = (
            b - a for a, b in zip(self.last, now, strict=True)
        )
        per_message = 1e3 / max(1, int(messages))
        teammates = {
            f"{m.name}/{m.pid}": rss for m in status.teammates if (rss := _rss_mib(m.pid)) is not None
        }
        memory = self.sup.memory_info()
        self.result.samples.append(
            Sample(
                t=round(time.monotonic() - self.started, 1),
                messages=self.result.messages_sent,
                supervisor_rss_mib=memory.rss / 2**20,
                forkserver_rss_mib=_rss_mib(status.forkserver) or 0.0,
                teammates_rss_mib=teammates,
                send_ms=self.send_seconds / max(1, self.sends) * 1e3,
                supervisor_cpu_ms_per_message=cpu * per_message,
                lead_check_us=check_seconds / max(1, int(checks)) * 1e6,
                lead_unread=self._lead_reports(),
                soak_cpu_ms_per_message=mine * per_message,
                others_cpu_ms_per_message=max(0.0, busy - cpu - mine) * per_message,
                iowait_percent=100 * iowait / total if total else 0.0,
                supervisor_anon_mib=(memory.rss - memory.shared) / 2**20,
            )
        )
        self.last, self.send_seconds, self.sends = now, 0.0, 0
        if self.out is not None:  # as it goes: a run cut short keeps its curves
            write_json(self.out, self.result, finished=False)


def _rss_mib(pid: int | None) -> float | None:
    """The RSS of ``pid`` in MiB, or None if it is not running (a teammate between a kill and
    its restart, a fork server being restarted or not used)."""
    if not pid:
        return None
    try:
        return float(psutil.Process(pid).memory_info().rss / 2**20)
    except (psutil.Error, ValueError):
        return None


def write_json(path: Path, result: SoakResult, *, finished: bool) -> None:
    data = {**asdict(result), "finished": finished, "ok": result.ok, "flat": result.flat}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def judge(result: SoakResult) -> None:
    """Check the curves after the warm-up against the bounds (filling growth/too_much)."""
    after = [s for s in result.samples if s.t >= result.warmup]
    if len(after) < 4:
        result.too_much.append(f"only {len(after)} samples after the warm-up: run longer")
        return
    quarter = max(1, len(after) // 4)
    first, last = after[:quarter], after[-quarter:]
    for name in ("supervisor", "forkserver"):
        # Quarter medians, as for the costs: a sample can land on a moment when the
        # interpreter holds one more 1 MiB arena; the peak is recorded beside.
        key = f"{name}_rss_mib"
        start = statistics.median(getattr(s, key) for s in first)
        grown = statistics.median(getattr(s, key) for s in last) - start
        result.growth[key] = round(grown, 2)
        result.growth[f"{name}_rss_peak_mib"] = round(max(getattr(s, key) for s in after) - start, 2)
        if grown > 2.0:
            result.too_much.append(f"{name} RSS grew {grown:.1f} MiB after the warm-up (bound 2)")
    anon = [s.supervisor_anon_mib for s in after]
    result.growth["supervisor_anon_mib"] = round(
        statistics.median(anon[-quarter:]) - statistics.median(anon[:quarter]), 2
    )
    worst, who = 0.0, ""
    for key in {k for s in after for k in s.teammates_rss_mib}:
        seen = [s.teammates_rss_mib[key] for s in after if key in s.teammates_rss_mib]
        if len(seen) >= 3 and seen[-1] - seen[1] > worst:  # from its second sample: past start-up
            worst, who = seen[-1] - seen[1], key
    result.growth["worst_teammate_rss_mib"] = round(worst, 2)
    if worst > 2.0:
        result.too_much.append(f"teammate {who} grew {worst:.1f} MiB between restarts (bound 2)")
    firsts: dict[str, float] = {}  # each incarnation's RSS when first seen, in order of birth
    for s in after:
        for key, rss in s.teammates_rss_mib.items():
            firsts.setdefault(key, rss)
    sizes = list(firsts.values())
    if len(sizes) >= 20:
        tenth = len(sizes) // 10
        grown = statistics.median(sizes[-tenth:]) - statistics.median(sizes[:tenth])
        result.growth["teammate_start_rss_mib"] = round(grown, 2)
        if grown > 2.0:
            result.too_much.append(f"teammates start {grown:.1f} MiB bigger late than early (bound 2)")
    for name in ("send_ms", "supervisor_cpu_ms_per_message", "lead_check_us"):
        start = statistics.median(getattr(s, name) for s in first)
        end = statistics.median(getattr(s, name) for s in last)
        result.growth[f"{name}_end_over_start"] = round(end / start, 2) if start else 0.0
        if start and end > 2 * start:
            result.too_much.append(f"{name} went from {start:.3g} to {end:.3g} (bound 2x)")


def plot(result: SoakResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t / 60 for s in result.samples]
    fig, (mem, cost) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    mem.plot(t, [s.supervisor_rss_mib for s in result.samples], label="supervisor", linewidth=2)
    mem.plot(
        t,
        [s.supervisor_anon_mib for s in result.samples],
        label="supervisor, less file-backed pages",
        linestyle="--",
    )
    mem.plot(t, [s.forkserver_rss_mib or float("nan") for s in result.samples], label="fork server")
    names = sorted({k.split("/")[0] for s in result.samples for k in s.teammates_rss_mib})
    for name in names:
        mem.plot(
            t,
            [
                max(
                    (v for k, v in s.teammates_rss_mib.items() if k.split("/")[0] == name),
                    default=float("nan"),
                )
                for s in result.samples
            ],
            linewidth=0.6,
            alpha=0.6,
            label=f"{name} (drops: restarts)" if name == names[0] else None,
        )
    mem.axvline(result.warmup / 60, color="grey", linestyle=":", label="end of warm-up")
    mem.set_ylabel("RSS (MiB)")
    mem.legend(loc="lower right", fontsize=8)
    cost.plot(t, [s.send_ms * 1e3 for s in result.samples], label="send call (µs)")
    cost.plot(t, [s.lead_check_us for s in result.samples], label="look at the lead's inbox (µs)")
    cost.plot(
        t,
        [s.supervisor_cpu_ms_per_message * 1e3 for s in result.samples],
        label="supervisor CPU per message (µs)",
    )
    cost.plot(
        t,
        [s.others_cpu_ms_per_message * 1e3 for s in result.samples],
        label="teammates' and the rest's CPU per message (µs)",
    )
    twin = cost.twinx()
    twin.plot(
        t,
        [s.lead_unread for s in result.samples],
        color="grey",
        linestyle="--",
        label="unread in the lead's inbox",
    )
    twin.set_ylabel("unread reports")
    cost.set_yscale("log")
    cost.set_xlabel("minutes")
    cost.set_ylabel("cost")
    cost.legend(loc="upper left", fontsize=8)
    twin.legend(loc="lower right", fontsize=8)
    fig.suptitle(
        f"soak: {result.teammates} teammates, {result.seconds / 60:.0f} min, {result.kills} SIGKILLs"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run_soak(
    seconds: float,
    teammates: int = 8,
    seed: int = 1,
    root: Path | None = None,
    sample_every: float = 10.0,
    out: Path | None = None,
) -> SoakResult:
    rng = random.Random(seed)
    root = root or Path(tempfile.mkdtemp(prefix="agentteams-soak-"))
    team = Team.create("soak", root=root, cwd=str(root))
    result = SoakResult(seconds=seconds, teammates=teammates, warmup=min(300.0, seconds / 4))
    expected: Counter[tuple[str, int]] = Counter()  # (recipient, message id)
    try:
        with STOP.held():
            team.up(restart="on-failure", intensity=10_000, period=60.0)
        names = [team.spawn(f"w{i}", prompt="Soak: work the task list.") for i in range(teammates)]
        sup = psutil.Process(team.supervisor_pid() or 0)
        time.sleep(1.0)
        result.supervisor_fds = (sup.num_fds(), 0)
        result.supervisor_rss_mib = (sup.memory_info().rss / 2**20, 0.0)
        sampler = Sampler(team, sup, result, sample_every, out)
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            sampler.maybe_sample()
            n += 1
            action = rng.random()
            if action < 0.45:
                target = rng.choice(names)
                sampler.timed_send(team.send, target, f"soak-{n} hello", summary=f"soak {n}")
                expected[(target, n)] += 1
                result.messages_sent += 1
            elif action < 0.55:
                sender = rng.choice(names)
                response = sampler.timed_send(
                    team.broadcast, f"soak-{n} to all", summary=f"soak {n}", sender=sender
                )
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
                    try:
                        os.kill(rng.choice(victims).pid or 0, signal.SIGKILL)
                        result.kills += 1
                    except ProcessLookupError:
                        pass  # it exited (or was killed) since the status was read
            time.sleep(rng.uniform(0.005, 0.05))
        sampler.sample()
        judge(result)
        settle(team, names)
        result.supervisor_fds = (result.supervisor_fds[0], sup.num_fds())
        result.supervisor_rss_mib = (result.supervisor_rss_mib[0], sup.memory_info().rss / 2**20)
        check(team, names, expected, result)
    finally:
        with STOP.held():
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
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--plot", type=Path, help="draw memory and cost over time here (PNG)")
    args = parser.parse_args()
    STOP.install()
    root = Path(tempfile.mkdtemp(prefix="agentteams-soak-"))  # 100+ MB after a long run
    passed = False
    try:
        result = run_soak(
            args.seconds, args.teammates, args.seed, root=root, sample_every=args.sample, out=args.json
        )
        summary = {k: v for k, v in asdict(result).items() if k != "samples"}
        print(json.dumps({**summary, "ok": result.ok, "flat": result.flat}, indent=1))
        if args.json:
            write_json(args.json, result, finished=True)
        if args.plot:
            plot(result, args.plot)
        passed = result.ok and result.flat
        return 0 if passed else 1
    except Interrupted as stop:
        print(f"soak: stopped by {stop}; the team is down", file=sys.stderr)
        return 128 + stop.signum
    finally:
        if passed:
            shutil.rmtree(root, ignore_errors=True)
            remove_runtime_dirs(root)  # the team's logs and sockets
        else:
            print(f"soak: its root is kept for a look: {root}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
