"""The supervisor's part in a team on the engine, one per host: this host's heartbeat and
the other hosts' leases, tasks made claimable on other hosts, and the lead's doorbell rung
from any host.

- Heartbeat: every :func:`heartbeat_seconds` the key ``host.{name}`` is rewritten with a
  counter. A host whose record has not changed for :func:`lease_seconds` (as this host's
  clock sees it, so no two clocks are compared) is marked dead by one compare-and-set: the
  one supervisor that wins releases the dead host's teammates' tasks and marks them
  inactive. A host that comes back writes its record again and resumes its members.
- Ready tasks: what this host's agents report claimable goes out on ``at.{team}.ready``;
  what other hosts report wakes one idle teammate here, as a local report does.
- The lead's doorbell: a ring on ``at.{team}.wake.team-lead`` from any host makes the lead
  desk look.

Engine calls block while the server is away, so they run on a thread of their own; what the
loop must do is handed to it through a pipe.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from ipc.engine import connection, hosts, remote
from ipc.engine.mirror import Mirror
from ipc.engine.ring import EngineWakeListener
from ipc.engine.team import EngineTeam, Entry
from ipc.errors import AgentTeamsError, Conflict, Timeout, TransportError
from ipc.schemas import LEAD_NAME
from ipc.settings import env
from ipc.team_state import TeamState
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")


def heartbeat_seconds() -> float:
    return float(env("AGENTTEAMS_ENGINE_HEARTBEAT", "2"))


def mirror_seconds() -> float:
    return float(env("AGENTTEAMS_MIRROR_INTERVAL", "0.2"))


def lease_seconds() -> float:
    return float(env("AGENTTEAMS_ENGINE_LEASE", "10"))


class Ready(msgspec.Struct):
    host: str
    ids: list[str]


def claim_host_name(engine: EngineTeam, host: str) -> None:
    """Refuse this host's name while another supervisor holds it: two would run the same
    members and answer each other's requests. The holder is asked on the engine, where it
    answers for the name: no responder is a name free (its supervisor gone, however it
    went), an answer or a wait is one held. No clocks or pids are compared. Two claiming it
    at once both find it free: the host's record, read before asking, is then written by
    compare-and-set, and only one of them writes it. A record that says "up" may be a claim
    whose supervisor does not serve the name yet: it is asked again before it is taken."""
    key = f"host.{host}"
    before, _ = engine.lookup(key, fresh=True)
    last = hosts.record(before)
    held = "a live supervisor"
    try:
        if not hosts.answered(engine, host, hosts.ASKS if last is not None and last.state == "up" else 1):
            won = False

            def claim(current: Entry | None) -> bytes | None:
                nonlocal won
                unchanged = (current.rev if current else 0) == (before.rev if before else 0)
                record = hosts.record(current)
                # Changed by a claim (state "up"), not by a host marking the last holder dead.
                won = unchanged or (record is not None and record.state != "up")
                if won:
                    return msgspec.json.encode(hosts.HostRecord(host=host, pid=os.getpid(), state="up"))
                return current.data if current is not None else None

            engine.update(key, claim, f"claiming host name {host!r}")
            if won:
                return
            held = "a supervisor that claimed it at the same moment"
    except Timeout:
        held = f"a supervisor that did not answer within {hosts.ASK_TIMEOUT:g}s"
    except TransportError:
        raise  # the engine away: nothing can be claimed
    except Exception:  # an answer of any kind (a refusal, one we cannot read): someone holds it
        pass
    raise Conflict(f"host name {host!r} is held by {held}; give this one another with 'up --host-name NAME'")


class EngineHost:
    def __init__(
        self,
        reactor: Reactor,
        state: TeamState,
        route_tasks: Callable[[list[str]], object],
        lead_woken: Callable[[], None],
        teammate_pids: Callable[[], list[int]] = list,
    ) -> None:
        assert state.engine is not None
        self.reactor = reactor
        self.state = state
        self.engine: EngineTeam = state.engine
        self.host = state.host
        claim_host_name(self.engine, self.host)  # before it answers or hears anything as this host
        self.route_tasks = route_tasks
        self.teammate_pids = teammate_pids  # this host's running teammates
        self._actions: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        reactor.add_reader(self._read_fd, self._run_actions)
        self.lead_ring = EngineWakeListener(self.engine, LEAD_NAME)
        self.lead_woken = lead_woken
        reactor.add_reader(self.lead_ring.fileno(), self._lead_rung)
        self.engine.subscribe(self.engine.ready_subject, self._on_ready)
        runtime = state.paths.runtime_dir()
        self.engine.serve(self.engine.control_subject(self.host), lambda data: remote.relay(runtime, data))
        self._seen: dict[str, tuple[int, float]] = {}  # host → (revision, when it last changed)
        self._stop = threading.Event()
        self.beat = 0
        self._write_record("up")
        self._thread = threading.Thread(target=self._heartbeats, name="engine-host", daemon=True)
        self._thread.start()
        self.mirror = Mirror(state.paths, self.engine, state.messenger.mailbox, self._ring)
        self._mirroring = threading.Thread(target=self._mirror, name="engine-mirror", daemon=True)
        self._mirroring.start()

    def _ring(self, name: str) -> None:
        waker = self.state.messenger.waker
        if waker is not None:
            waker.wake(name)

    def _mirror(self) -> None:
        """This host's copy of the team in Claude Code's layout, both ways (ipc.engine.mirror)."""
        while not self._stop.wait(mirror_seconds()):
            try:
                self.mirror.step()
            except AgentTeamsError as exc:
                log.warning("mirror: %s", exc.message)
            except Exception:
                log.exception("mirror: a pass failed")

    # ------------------------------------------------------------ into the loop

    def _later(self, action: Callable[[], None]) -> None:
        self._actions.put(action)
        try:
            os.write(self._write_fd, b"\0")
        except (BlockingIOError, OSError):
            pass

    def _run_actions(self) -> None:
        try:
            os.read(self._read_fd, 4096)
        except BlockingIOError:
            pass
        while True:
            try:
                action = self._actions.get_nowait()
            except queue.Empty:
                return
            action()

    def _lead_rung(self) -> None:
        self.lead_ring.drain()
        self.lead_woken()

    # ------------------------------------------------------------ ready tasks

    def publish_ready(self, ids: list[str]) -> None:
        if ids:
            self.engine.signal(self.engine.ready_subject, msgspec.json.encode(Ready(host=self.host, ids=ids)))

    def _on_ready(self, msg: Any) -> None:
        try:
            ready = msgspec.json.decode(msg.data, type=Ready)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if ready.host != self.host:
            self._later(lambda: self._route(ready.ids))

    def _route(self, ids: list[str]) -> None:
        self.route_tasks(ids)

    # ------------------------------------------------------------ heartbeats and leases

    def _write_record(self, state: str) -> hosts.HostRecord | None:
        """Write this host's record; the one it replaced."""
        self.beat += 1
        record = hosts.HostRecord(host=self.host, pid=os.getpid(), beat=self.beat, state=state)
        replaced: hosts.HostRecord | None = None

        def write(current: Entry | None) -> bytes:
            nonlocal replaced
            replaced = hosts.record(current)
            return msgspec.json.encode(record)

        self.engine.update(f"host.{self.host}", write, "heartbeat")
        return replaced

    def _heartbeats(self) -> None:
        while not self._stop.wait(heartbeat_seconds()):
            try:
                if (last := self._write_record("up")) is not None and last.state == "dead":
                    self._later(functools.partial(self._found_dead, last.by))
                self._check_leases()
            except AgentTeamsError as exc:
                log.warning("engine: %s", exc.message)
            except Exception:
                log.exception("engine: heartbeat failed")

    def _check_leases(self) -> None:
        now = time.monotonic()
        for key in self.engine.keys("host."):
            host = key[5:]
            entry = self.engine.get(key)
            if host == self.host or entry is None:
                continue
            seen = self._seen.get(host)
            if seen is None or seen[0] != entry.rev:
                self._seen[host] = (entry.rev, now)
                continue
            if now - seen[1] < lease_seconds():
                continue
            record = hosts.record(entry)
            if record is not None and record.state == "up":
                self._declare_dead(key, entry, record)

    def _declare_dead(self, key: str, entry: Entry, record: hosts.HostRecord) -> None:
        dead = msgspec.structs.replace(record, state="dead", by=self.host)
        won = False

        def mark(current: Entry | None) -> bytes | None:
            nonlocal won
            won = current is not None and current.rev == entry.rev
            return msgspec.json.encode(dead) if won else (current.data if current else None)

        self.engine.update(key, mark, "marking a host dead")
        if not won:
            return  # it beat again, or another host found it first
        log.warning(
            "host %s stopped answering for %gs: releasing its teammates' tasks", record.host, lease_seconds()
        )
        for member in self.state.config.read().teammates():
            if member.host_name != record.host:
                continue
            # As a crashed teammate's: back to pending with no error, for any teammate to run.
            released = self.state.tasks.release_owner(member.name)
            # Written whatever this host's copy says: the dead host's last mark may not be here yet.
            self.state.config.update_member(member.name, is_active=False)
            log.warning("host %s: %s inactive, released %s", record.host, member.name, released)

    def _found_dead(self, by: str) -> None:
        """This host was cut off past its lease: host ``by`` released its teammates' tasks
        (others may be running them now) and marked them inactive. What they are doing is no
        longer theirs to finish: each is killed, and restarted as after a crash."""
        pids = self.teammate_pids()
        log.warning(
            "host %s found this host dead while it was cut off: restarting its %d teammate(s)", by, len(pids)
        )
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def going_down(self) -> None:
        """From now on a write to an engine that is away gives up at once (also one the loop is
        stuck in): the other hosts' leases make good what this host does not write."""
        connection.impatient()

    def close(self) -> None:
        self._stop.set()
        self._mirroring.join(5)
        if connection.gave_up():  # "down" would say all is written: the lease releases the rest
            log.warning("engine: writes were left undone going down; this host's lease runs out instead")
        else:
            try:
                self._write_record("down")
            except AgentTeamsError:
                pass
        self.reactor.remove_reader(self._read_fd)
        self.reactor.remove_reader(self.lead_ring.fileno())
        self.lead_ring.close()
        for fd in (self._read_fd, self._write_fd):
            os.close(fd)
