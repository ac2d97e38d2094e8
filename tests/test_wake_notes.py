"""A ring may name a task (the on-call ring of a process that made one): the recipient reads
the id as a hint, and nothing but a task id."""

from __future__ import annotations

from pathlib import Path

import zmq

from ipc.wake import WakeListener, Waker


def test_a_ring_names_a_task_and_nothing_else_passes_as_one(tmp_path: Path) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    listener = WakeListener(ctx, tmp_path, "ann")
    waker = Waker(tmp_path)
    try:
        for note in (b"", b"17", b"../etc", b"1" * 13, b"4 2", b"9"):
            assert waker.wake("ann", note)
        count = 0
        while count < 6:
            assert listener.socket.poll(5000), "a ring was lost"
            count += listener.drain()
        assert count == 6  # every ring wakes, whatever it carries
        assert listener.take_notes() == ["17", "9"]  # only task ids, in order
        assert listener.take_notes() == []  # each once
    finally:
        waker.close()
        listener.close()
        ctx.term()
