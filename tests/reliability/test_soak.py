"""The soak's short version: 30 seconds of traffic and kills, nothing lost or duplicated; and
a soak stopped by a signal brings its team down and keeps its root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from ipc.errors import AgentTeamsError
from ipc.mailbox import Mailbox
from ipc.osproc import alive
from ipc.schemas import parse_body
from supervisor import Team
from tests.reliability.soak import run_soak

SOAK = Path(__file__).with_name("soak.py")


@pytest.mark.heavy
def test_soak_30_seconds(root: Path) -> None:
    seconds = float(os.environ.get("AGENTTEAMS_SOAK_SECONDS", "30"))
    result = run_soak(seconds, teammates=8, seed=42, root=root)
    print(result)
    assert result.kills > 0 and result.messages_sent > 100 and result.tasks > 50
    assert result.lost == 0 and result.duplicates == 0, result
    assert result.tasks_stuck == [] and result.unread_left == 0, result
    assert result.tasks_completed + result.tasks_open_unowned == result.tasks
    assert result.ok, result
    # Where the time went is recorded: the teammates work, so the rest's CPU shows.
    assert any(s.others_cpu_ms_per_message > 0 for s in result.samples), result.samples
    # The reports piling up for a person, counted past a cursor, none twice (archive passes).
    reports = [m for m in Mailbox(root, "soak", "team-lead").unread() if parse_body(m.text) is None]
    assert 0 < result.samples[-1].lead_unread <= len(reports)


def _running_team(under: Path, soak: subprocess.Popen[str]) -> tuple[Path, list[int]]:
    """The soak's root, once its supervisor and teammates run, and their pids."""
    deadline = time.monotonic() + 60
    team: Team | None = None
    try:
        while time.monotonic() < deadline:
            assert soak.poll() is None, soak.communicate()
            roots = list(under.glob("agentteams-soak-*"))
            try:
                team = team or (Team.open("soak", root=roots[0]) if roots else None)
                status = team.status() if team is not None else None
            except AgentTeamsError:
                status = None  # not made yet, or not up yet
            pids = [m.pid for m in status.teammates if m.pid] if status is not None else []
            if team is not None and status is not None and len(pids) == 2:
                return team.paths.root, [team.supervisor_pid() or 0, status.forkserver or 0, *pids]
            time.sleep(0.2)
    finally:
        if team is not None:
            team.close()
    raise AssertionError("the soak's team did not come up within 60 s")


@pytest.mark.heavy
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_soak_stopped_by_a_signal_brings_its_team_down_and_keeps_its_root(
    tmp_path: Path, sig: signal.Signals
) -> None:
    soak = subprocess.Popen(
        [sys.executable, str(SOAK), "--seconds", "20", "--teammates", "2"],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        root, pids = _running_team(tmp_path, soak)
        time.sleep(2)  # into the traffic
        soak.send_signal(sig)
        _, err = soak.communicate(timeout=60)
    finally:
        if soak.poll() is None:
            soak.kill()
    assert [pid for pid in pids if alive(pid)] == [], "the supervisor or a teammate outlived the soak"
    ours = [  # teammates restarted since those pids were taken, the fork server
        p.pid
        for p in psutil.process_iter(["cmdline", "environ"])
        if str(root) in " ".join(p.info["cmdline"] or [])
        or str(root) in (p.info["environ"] or {}).get("AGENTTEAMS_ROOT", "")
    ]
    assert [pid for pid in ours if alive(pid)] == [], "a process of the soak's team outlived it"
    assert soak.returncode == 128 + sig, err
    assert f"stopped by {sig.name}; the team is down" in err and f"kept for a look: {root}" in err
    assert root.is_dir()


@pytest.mark.heavy
def test_the_two_host_soak_stopped_by_sigterm_leaves_no_host_nor_engine(tmp_path: Path) -> None:
    soak = subprocess.Popen(
        [sys.executable, str(SOAK.with_name("soak_hosts.py")), "--seconds", "60", "--per-host", "1"],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def ours() -> list[int]:  # both supervisors, their teammates and the nats-server, by their paths
        return [
            p.pid
            for p in psutil.process_iter(["cmdline", "environ"])
            if p.pid != soak.pid
            and (
                str(tmp_path) in " ".join(p.info["cmdline"] or [])
                or str(tmp_path) in (p.info["environ"] or {}).get("AGENTTEAMS_ROOT", "")
            )
        ]

    try:
        deadline = time.monotonic() + 90
        while len(ours()) < 3 and time.monotonic() < deadline:  # the engine and two supervisors, at least
            time.sleep(0.5)
        time.sleep(3)  # into the traffic
        started = ours()
        assert len(started) >= 3, "the two-host soak did not start"
        soak.send_signal(signal.SIGTERM)
        _, err = soak.communicate(timeout=60)
    finally:
        if soak.poll() is None:
            soak.kill()
    assert [pid for pid in started if alive(pid)] == [] and ours() == [], "a host or the engine outlived it"
    assert soak.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM; both hosts and the engine are down" in err
    assert list(tmp_path.glob("agentteams-soak-hosts-*")) == []
