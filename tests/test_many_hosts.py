"""One team across two hosts on a real nats-server: two supervisors with their own roots
and host names on this machine, meeting only in the engine. The fallback poll is set far
above every deadline here, so what arrives in time was rung, not polled."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipc.engine import team as engine_team
from supervisor import Team
from tests.engine_helpers import Engine, running_engine, two_hosts
from tests.runtime_helpers import alive, cli, processes_under, wait_for

SLOW_POLL = 120.0


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    monkeypatch.setenv("AGENTTEAMS_ENGINE_HEARTBEAT", "0.5")
    monkeypatch.setenv("AGENTTEAMS_ENGINE_LEASE", "3")
    with running_engine(tmp_path / "engine") as found:
        yield found
        engine_team.close_all()


def texts(team: Team, name: str) -> list[str]:
    return [m.text for m in team.inbox(name).read()]


def all_done(team: Team) -> bool:
    tasks = team.tasks.list()
    return bool(tasks) and all(t.status == "completed" for t in tasks)


def test_a_dm_from_host_a_reaches_host_b_and_back(tmp_path: Path, engine: Engine) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        a.spawn("alice", prompt="")
        b.spawn("bob", prompt="")
        assert {m.name: m.host_name for m in a.config().teammates()} == {"alice": "ha", "bob": "hb"}
        a.send("bob", "hello from host a", summary="hi", sender="alice")
        reply = wait_for(lambda: [t for t in texts(a, "alice") if "bob received your message" in t], 15)
        assert "hello from host a" in reply[0]
        assert texts(b, "bob").count("hello from host a") == 1
        seen = {m.name: (m.host, m.pid is not None) for m in a.ps().teammates}
        assert seen == {"alice": ("ha", True), "bob": ("hb", False)}  # bob's process is host b's
        shown = cli(a.root, "ps", "many").stdout
        assert "many on ha: supervisor" in shown and "on host hb" in shown


def test_a_task_is_claimed_once_by_teammates_racing_on_both_hosts(tmp_path: Path, engine: Engine) -> None:
    log = tmp_path / "ran.log"
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        for name in ("a1", "a2"):
            a.spawn(name, prompt="")
        for name in ("b1", "b2"):
            b.spawn(name, prompt="")
        time.sleep(1.0)  # every teammate idle, waiting on its doorbell
        for i in range(6):
            a.tasks.create(f"race {i}", metadata={"command": f"echo {i} >> {log}"})
        wait_for(lambda: all_done(b), 30)
        lines = log.read_text().splitlines()
        assert sorted(line.split()[0] for line in lines) == [str(i) for i in range(6)]  # each ran once
        owners = {t.owner_name for t in b.tasks.list()}
        assert owners <= {"a1", "a2", "b1", "b2"}


def test_a_dag_across_hosts_runs_in_dependency_order(tmp_path: Path, engine: Engine) -> None:
    log = tmp_path / "dag.log"
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        a.spawn("w1", prompt="")
        a.spawn("w2", prompt="")
        b.spawn("w3", prompt="")
        b.spawn("w4", prompt="")
        steps = [
            ("make", []),
            ("left", ["@1"]),
            ("right", ["@1"]),
            ("more", ["@1"]),
            ("merge", ["@2", "@3", "@4"]),
        ]
        specs = [
            (name, "", None, {"command": f"sleep 0.3; echo {name} >> {log}"}, deps) for name, deps in steps
        ]
        created = b.tasks.create_many(specs)
        wait_for(lambda: all_done(a), 40)
        order = log.read_text().split()
        assert sorted(order) == sorted(name for name, _ in steps)
        assert order[0] == "make" and order[-1] == "merge"
        hosts = {m.name: m.host_name for m in a.config().teammates()}
        assert {hosts[t.owner_name or ""] for t in a.tasks.list()} <= {"ha", "hb"}
        assert [t.id for t in created] == [t.id for t in a.tasks.list()]


def test_the_server_killed_and_restarted_mid_run_loses_nothing(tmp_path: Path, engine: Engine) -> None:
    log = tmp_path / "work.log"
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        a.spawn("w1", prompt="")
        b.spawn("w2", prompt="")
        a.tasks.create_many(
            [(f"s{i}", "", None, {"command": f"sleep 0.5; echo s{i} >> {log}"}, []) for i in range(8)]
        )
        wait_for(lambda: log.exists(), 20)
        engine.kill()
        sent: list[str] = []

        def send_during_outage() -> None:
            for i in range(10):  # each blocks until the server is back, retried with its msg_id
                a.send("w2", f"during outage {i}", summary="o", sender="w1")
                sent.append(f"during outage {i}")

        sender = threading.Thread(target=send_during_outage)
        sender.start()
        time.sleep(1.5)
        engine.start()
        sender.join(60)
        assert len(sent) == 10
        wait_for(lambda: all_done(b), 60)
        got = [t for t in texts(b, "w2") if t.startswith("during outage")]
        assert sorted(got) == sorted(sent)  # each exactly once
        ran = log.read_text().split()
        assert len(ran) == len(set(ran)) == 8  # every task once


def test_a_host_whose_supervisor_dies_has_its_tasks_released(tmp_path: Path, engine: Engine) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        b.spawn("bee", prompt="")
        task = a.tasks.create("long", metadata={"command": "sleep 60"})
        wait_for(lambda: a.tasks.get(task.id).status == "in_progress", 15)
        assert a.tasks.get(task.id).owner_name == "bee"
        supervisor, bee = b.supervisor_pid(), b.ps().teammates[0].pid
        assert supervisor and bee
        os.kill(supervisor, signal.SIGKILL)
        wait_for(lambda: not alive([bee]), 10)  # its teammates die with it, as on one host
        released = wait_for(lambda: (t := a.tasks.get(task.id)).status == "pending" and t, 20)
        assert not released.failed, released  # as a crashed teammate's: anyone may run it again
        bee_member = a.config().member("bee")
        assert bee_member is not None and bee_member.is_active is False
        # The host comes back and catches up: its teammate resumes and finishes the work.
        a.tasks.update(task.id, status="pending", metadata={"command": "true"})
        with contextlib.suppress(Exception):
            b.down()
        b.up(fallback_poll=SLOW_POLL)
        wait_for(lambda: a.tasks.get(task.id).status == "completed", 30)


def test_a_host_name_a_live_supervisor_holds_is_refused(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        a.spawn("alice", prompt="")
        alice = a.status().teammates[0].pid
        other = tmp_path / "host-c"
        other.mkdir()
        monkeypatch.setenv("AGENTTEAMS_ENGINE", engine.url)
        said = cli(other, "up", "many", "--host-name", "ha", ok=False).stderr
        assert "host name 'ha' is held by a live supervisor" in said and "--host-name" in said, said
        assert len(said.strip().splitlines()) == 1, said
        assert not processes_under(other)  # no second alice, no supervisor
        assert a.status().teammates[0].pid == alice and a.config().member("alice") is not None


def test_a_host_name_held_on_another_machine_is_refused(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        assert a.state.engine is not None
        # A holder elsewhere answers for its name on the engine (what it says does not matter).
        a.state.engine.serve(a.state.engine.control_subject("hx"), lambda data: b"held")
        other = tmp_path / "host-c"
        other.mkdir()
        monkeypatch.setenv("AGENTTEAMS_ENGINE", engine.url)
        said = cli(other, "up", "many", "--host-name", "hx", ok=False).stderr
        assert "host name 'hx' is held by a live supervisor" in said, said
        assert not processes_under(other)


def test_down_stops_this_hosts_processes_while_the_engine_is_away(tmp_path: Path, engine: Engine) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        b.spawn("bee", prompt="")
        supervisor, bee = b.supervisor_pid(), b.ps().teammates[0].pid
        cli(a.root, "send", "many", "bee", "before", "--summary", "s")  # host A's resident door serves it
        engine.kill()  # bee's isActive mark may be on its way: it must not hold the supervisor
        try:
            # A command through the resident door fails at once and changes nothing (it was
            # told it failed after 20 s, then carried out when the engine came back).
            said = cli(
                a.root, "send", "many", "bee", "while away", "--summary", "s", ok=False, timeout=20
            ).stderr
            assert "is away; try again once it is back" in said, said
            done = cli(b.root, "down", "many", "--engine", engine.url, timeout=45)
            assert done.stdout.strip() == "team many is down here", done
            assert not alive([supervisor or 0, bee or 0])
        finally:
            engine.start()
        wait_for(lambda: a.tasks.list() == [])  # the engine answers again
        assert "while away" not in json.dumps([m.text for m in a.inbox("bee").read()])
        # Host B left writes undone going down: it did not say "down", and its lease ran out.
        assert a.state.engine is not None

        def state_of_b() -> str:
            entry = a.state.engine.get("host.hb", fresh=True)  # type: ignore[union-attr]
            return str(json.loads(entry.data)["state"]) if entry is not None else ""

        assert wait_for(lambda: state_of_b() == "dead", 20)


def test_a_host_found_dead_while_cut_off_restarts_its_teammates(tmp_path: Path, engine: Engine) -> None:
    # Cut off past its lease, host B was marked dead and its teammates' tasks released (and
    # claimed on host A); back, its heartbeat wrote "up" over "dead" and never knew: its
    # teammates finished what others were running again, and stayed marked inactive.
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        b.spawn("bee", prompt="")
        first = wait_for(
            lambda: (m := b.status().teammate("bee")) is not None and m.state == "idle" and m.pid
        )
        assert a.state.engine is not None
        held = a.state.engine.get("host.hb", fresh=True)
        assert held is not None
        dead = json.loads(held.data) | {"state": "dead", "by": "ha"}  # as host A's lease check writes it
        a.state.engine.update("host.hb", lambda _: json.dumps(dead).encode(), "marking hb dead")
        a.store.update_member("bee", is_active=False)
        again = wait_for(
            lambda: (
                (m := b.status().teammate("bee")) is not None
                and m.state == "idle"
                and m.pid != first
                and m.pid
            ),
            timeout=30,
        )
        assert again and not alive([first])
        entry = a.state.engine.get("host.hb", fresh=True)
        assert entry is not None and json.loads(entry.data)["state"] == "up"
        member = a.config().member("bee")
        assert member is not None and member.is_active is True  # marked again by its restart


def test_spawn_on_another_host_from_here(tmp_path: Path, engine: Engine) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        assert a.spawn("far", prompt="", host="hb") == "far"
        member = a.config().member("far")
        assert member is not None and member.host_name == "hb"
        assert [t.name for t in b.status().teammates] == ["far"] and a.status().teammates == []
        assert a.shutdown("far").name == "far"
        assert a.config().member("far") is None


def test_the_offline_lead_runs_a_team_on_the_engine_from_host_b(tmp_path: Path, engine: Engine) -> None:
    out = tmp_path / "lead.log"
    goal = "\n".join(
        [
            "Teammates: 2",
            f"1. Make: `echo make >> {out}`",
            f"2. Use [after 1]: `echo use >> {out}`",
        ]
    )
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        a.spawn("helper", prompt="")  # a teammate on host A the lead on B does not start
        result = b.lead(goal, timeout=120)
        assert result.stopped_by == "done", result
        assert out.read_text().split() == ["make", "use"]


def test_up_names_this_hosts_teammates_and_a_root_not_joined_looks_and_sends(
    tmp_path: Path, engine: Engine
) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=SLOW_POLL) as (a, b):
        a.spawn("alice", prompt="")
        b.spawn("bob", prompt="")
        b.down(grace=2)
        # Host B's supervisor resumes bob only: alice is host A's, and saying so misled.
        said = cli(b.root, "up", "many").stdout
        assert said.rstrip().endswith("; resumed bob"), said
        # A stranger's name is answered with every host's members, not this host's teammates.
        refused = cli(b.root, "shutdown", "many", "nobody", ok=False).stderr
        assert "'nobody' is not a member of team 'many'; members: team-lead, alice, bob" in refused, refused
        # README: from any host, with --engine URL, `ps myteam` shows every host's members.
        elsewhere = tmp_path / "host-c"
        elsewhere.mkdir()
        shown = cli(elsewhere, "ps", "many", "--engine", engine.url).stdout
        assert "alice" in shown and "on host ha" in shown and "on host hb" in shown, shown
        assert not any(elsewhere.iterdir())  # a look writes nothing into a root that has not joined
        # A person's send from there is signed as the lead, with a key the engine's config knows.
        sent = cli(elsewhere, "send", "many", "bob", "hello from c", "--summary", "c", "--engine", engine.url)
        assert sent.stderr == "", sent.stderr
        assert "(verified): hello from c" in cli(b.root, "inbox", "many", "bob").stdout
