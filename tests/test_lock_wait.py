"""How a wait for a busy lock behaves: retried at once for a while (so a lock held for
microseconds changes hands without a sleep), then polled; and its settings."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from ipc import lock_settings, locks
from ipc.errors import LockTimeout, StorageError


def _wait_counting_sleeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spin: float) -> list[float]:
    """Take the lock of a file while another descriptor holds it (another holder, as far as
    flock is concerned), with the spin set to ``spin``; the sleeps of this thread's wait.
    The holder lets go at the waiter's first sleep (so a waiter that sleeps is seen to), or
    after 0.2 s (a waiter that spins for longer takes it then without a sleep)."""
    target = tmp_path / "inbox.json"
    monkeypatch.setattr(lock_settings, "_spin", spin)
    monkeypatch.setattr(locks, "_spinning", locks._Spinning())  # no spins lost before this one
    waiter = threading.get_ident()
    sleeps: list[float] = []
    slept = threading.Event()
    real_sleep = time.sleep

    def counted_sleep(seconds: float) -> None:
        if threading.get_ident() == waiter:  # not another thread's (the lock refresher's)
            sleeps.append(seconds)
            slept.set()
        real_sleep(seconds)

    fd = os.open(locks.own_lock_path(target), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)

    def let_go() -> None:
        slept.wait(0.2)
        os.close(fd)

    holder = threading.Thread(target=let_go)
    monkeypatch.setattr("time.sleep", counted_sleep)
    holder.start()
    try:
        with locks.locked(target, root=tmp_path, timeout=10):
            pass
    finally:
        monkeypatch.setattr("time.sleep", real_sleep)
        holder.join()
    return sleeps


def test_a_lock_freed_while_the_waiter_spins_is_taken_without_a_sleep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _wait_counting_sleeps(tmp_path, monkeypatch, spin=5.0) == []


def test_without_the_spin_the_waiter_sleeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _wait_counting_sleeps(tmp_path, monkeypatch, spin=0.0)  # the check above can fail


def test_a_spin_ends_at_the_waits_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "inbox.json"
    monkeypatch.setattr(lock_settings, "_spin", 60.0)
    monkeypatch.setattr(locks, "_spinning", locks._Spinning())
    fd = os.open(locks.own_lock_path(target), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        started = time.monotonic()
        with pytest.raises(LockTimeout), locks.locked(target, root=tmp_path, timeout=0.05):
            pass
        assert time.monotonic() - started < 30  # the deadline, not the minute's spin
    finally:
        os.close(fd)


def test_a_process_whose_spins_are_mostly_lost_spins_at_every_fourth_wait_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lock_settings, "_spin", 200e-6)
    spinning = locks._Spinning()
    assert [spinning.budget() for _ in range(4)] == [200e-6] * 4  # a new process spins
    for _ in range(8):
        spinning.note(won=False)  # three in four lost, as among 64 teammates reporting to a lead
        spinning.note(won=False)
        spinning.note(won=False)
        spinning.note(won=True)
    assert [spinning.budget() for _ in range(8)] == [0.0, 0.0, 0.0, 200e-6] * 2
    for _ in range(8):
        spinning.note(won=True)  # the crowd thinned: the probes win
    assert [spinning.budget() for _ in range(4)] == [200e-6] * 4


def test_the_spin_is_off_on_one_cpu_and_200us_on_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTTEAMS_LOCK_SPIN_US", raising=False)
    for cpus, expected in (({0}, 0.0), ({0, 1}, 200e-6)):
        monkeypatch.setattr(lock_settings, "_spin", None)
        monkeypatch.setattr("os.sched_getaffinity", lambda pid, cpus=cpus: cpus)
        assert lock_settings.spin_seconds() == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("fast", "AGENTTEAMS_LOCK_SPIN_US='fast'; use a number of microseconds"),
        ("-5", "AGENTTEAMS_LOCK_SPIN_US='-5'; use 0 to 10000 microseconds"),
        ("nan", "AGENTTEAMS_LOCK_SPIN_US='nan'; use 0 to 10000 microseconds"),
        ("inf", "AGENTTEAMS_LOCK_SPIN_US='inf'; use 0 to 10000 microseconds"),
        ("20000", "AGENTTEAMS_LOCK_SPIN_US='20000'; use 0 to 10000 microseconds"),
    ],
)
def test_a_bad_spin_setting_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, value: str, error: str
) -> None:
    monkeypatch.setattr(lock_settings, "_spin", None)
    monkeypatch.setenv("AGENTTEAMS_LOCK_SPIN_US", value)
    with pytest.raises(StorageError) as caught:
        lock_settings.spin_seconds()
    assert str(caught.value) == error


def test_a_spin_setting_is_read_in_microseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock_settings, "_spin", None)
    monkeypatch.setenv("AGENTTEAMS_LOCK_SPIN_US", "0")
    assert lock_settings.spin_seconds() == 0.0
    monkeypatch.setattr(lock_settings, "_spin", None)
    monkeypatch.setenv("AGENTTEAMS_LOCK_SPIN_US", "1500")
    assert lock_settings.spin_seconds() == pytest.approx(0.0015)


def test_a_bad_timeout_setting_is_still_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock_settings, "_lock_timeout", None)
    monkeypatch.setenv("AGENTTEAMS_LOCK_TIMEOUT", "0")
    with pytest.raises(StorageError, match=r"AGENTTEAMS_LOCK_TIMEOUT='0'; use a positive number of seconds$"):
        lock_settings.default_timeout()


def test_a_bad_spin_setting_refuses_a_free_lock_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock_settings, "_spin", None)
    monkeypatch.setenv("AGENTTEAMS_LOCK_SPIN_US", "fast")
    with (
        pytest.raises(StorageError, match="AGENTTEAMS_LOCK_SPIN_US='fast'"),
        locks.locked(tmp_path / "inbox.json", root=tmp_path),
    ):
        pass  # not only at the first lock found busy, maybe hours into a run
    assert not locks.own_lock_path(tmp_path / "inbox.json").exists()  # nothing made
