"""A new task is handed to the on-call teammate as it is made: written already claimed for
it, under the list's lock, so the teammate its creator rings starts it without a claim of
its own; given back when nobody can tell that teammate, or when it turns out to be gone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipc import link
from ipc.wake import ON_CALL, on_call
from supervisor.client.team import Team
from tests.router_helpers import frames_to, routing
from tests.runtime_helpers import running_team, wait_for


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team.create("t", root=tmp_path, cwd=str(tmp_path))


def test_the_first_claimable_task_is_made_the_named_teammates_and_told_first(team: Team) -> None:
    told: list[tuple[list[str], str]] = []
    team.tasks.hand_first = lambda: "w1"
    team.tasks.on_ready = lambda ids, handed="": told.append((ids, handed))
    made = team.tasks.create_many(
        [
            ("blocked", "", None, None, ["@2"]),
            ("first free", "", None, None, []),
            ("second free", "", None, None, []),
        ]
    )
    blocked, first, second = (team.tasks.get(t.id) for t in made)
    assert (first.owner_name, first.status) == ("w1", "in_progress")
    assert (second.owner_name, second.status) == (None, "pending")
    assert (blocked.owner_name, blocked.status) == (None, "pending")
    assert told == [([first.id, second.id], "w1")]


def test_a_task_made_with_an_owner_or_with_nobody_on_call_is_handed_to_no_one(team: Team) -> None:
    asked: list[str] = []

    def ask(name: str) -> str:
        asked.append(name)
        return name

    team.tasks.hand_first = lambda: ask("")
    team.tasks.on_ready = lambda ids, handed="": None
    task = team.tasks.create("nobody on call")
    assert (team.tasks.get(task.id).owner_name, team.tasks.get(task.id).status) == (None, "pending")
    team.tasks.hand_first = lambda: ask("w1")
    assert team.tasks.create("for the lead", owner="team-lead").owner_name == "team-lead"
    assert asked == [""]  # an owner given: nobody is asked


def test_a_handed_task_goes_back_only_while_it_is_still_that_teammates(team: Team) -> None:
    team.tasks.hand_first = lambda: "w1"
    team.tasks.on_ready = lambda ids, handed="": None
    task = team.tasks.create("handed")
    assert not team.tasks.give_back(task.id, "w2")
    assert team.tasks.give_back(task.id, "w1")
    back = team.tasks.get(task.id)
    assert (back.owner_name, back.status) == (None, "pending")
    assert not team.tasks.give_back(task.id, "w1")  # once


def test_a_creator_hands_once_per_spell_on_call(team: Team) -> None:
    runtime = team.paths.runtime_dir()
    on_call = runtime / ON_CALL
    on_call.write_bytes(b"w1")
    assert team._hand_first() == "w1"
    assert team._hand_first() == ""  # the supervisor has not named the next one yet
    stat = on_call.stat()
    on_call.write_bytes(b"w1")
    os.utime(on_call, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # named again
    assert team._hand_first() == "w1"
    on_call.write_bytes(b"")
    assert team._hand_first() == ""


def test_with_no_supervisor_to_tell_a_handed_task_goes_back_at_once(team: Team) -> None:
    (team.paths.runtime_dir() / ON_CALL).write_bytes(b"w1")  # left by a supervisor that was killed
    task = team.tasks.create("nobody rings w1")
    back = team.tasks.get(task.id)
    assert (back.owner_name, back.status) == (None, "pending")


def test_the_supervisor_leaves_a_handed_task_to_a_busy_teammate_and_gives_it_back_from_a_gone_one(
    tmp_path: Path,
) -> None:
    with routing(tmp_path, ("ann", "bob", "cat")) as (router, roster, agents):
        given_back: list[tuple[str, str]] = []
        router.on_give_back = lambda task_id, name: given_back.append((task_id, name))
        router.hand_out = lambda pairs: pairs  # every pair claimed, as the task list would
        roster.idle_names = ["bob", "cat"]  # ann is in a turn
        woken = router.route_tasks(["7", "8"], rung="ann", handed=True)
        assert woken == ["bob"]  # 7 stays ann's, for after its turn; 8 to an idle teammate
        assert frames_to(agents["bob"]) == [link.Wake(task="8")]
        assert given_back == [] and not router.ready

        roster.gone = {"ann"}  # ann died before it could start 9
        woken = router.route_tasks(["9"], rung="ann", handed=True)
        assert given_back == [("9", "ann")]
        assert woken == ["cat"]
        assert frames_to(agents["cat"]) == [link.Wake(task="9")]


def test_the_on_call_teammate_does_the_task_it_was_handed_and_a_burst_is_shared(tmp_path: Path) -> None:
    """Real processes: the on-call teammate, rung with a task already its own, runs it; a
    burst from one creator is not queued behind that one teammate."""
    with running_team(tmp_path) as team:
        for name in ("w1", "w2", "w3"):
            team.spawn(name, prompt="")
        runtime = team.paths.runtime_dir()
        wait_for(lambda: on_call(runtime), timeout=30)  # one is named once a teammate is idle
        first = team.tasks.create("handed", metadata={"command": "true"})
        named = first.owner_name
        assert named in ("w1", "w2", "w3") and first.status == "in_progress"  # made its own
        burst = [team.tasks.create(f"burst {i}", metadata={"command": "sleep 0.2"}) for i in range(4)]

        def done() -> bool:
            return all(t.status == "completed" for t in team.tasks.list())

        team.wait_until(lambda t: done(), timeout=60)
        assert team.tasks.get(first.id).owner_name == named
        assert len({team.tasks.get(t.id).owner_name for t in burst}) > 1  # shared out, not all one's
