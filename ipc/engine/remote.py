"""A host's supervisor reached from another host: the control requests of
:mod:`ipc.control` (spawn, shutdown, restart, push), sent as NATS requests on
``at.{team}.ctl.{host}`` and relayed by that host's supervisor to its own control socket,
so the answer is the one a local caller would get."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ipc import control
from ipc.engine.team import EngineTeam
from ipc.errors import AgentTeamsError, NotRunning, SupervisorError, Timeout


def call(engine: EngineTeam, host: str, request: Any, timeout: float) -> Any:
    """``request`` answered by ``host``'s supervisor."""
    import nats.errors

    async def ask() -> bytes:
        try:
            msg = await engine.conn.nc.request(
                engine.control_subject(host), control.encode(request), timeout=timeout
            )
        except nats.errors.NoRespondersError:
            raise NotRunning(
                f"host {host!r} of team {engine.team!r} is not up; run 'agentteams up {engine.team} --host-name {host}' there"
            ) from None
        except nats.errors.TimeoutError:
            raise Timeout(f"the supervisor on host {host!r} did not answer within {timeout:g}s") from None
        return bytes(msg.data)

    reply = msgspec.msgpack.decode(engine.conn.run(ask(), timeout + 2), type=control.Reply)
    if not reply.ok:
        raise control.REFUSALS.get(reply.kind, SupervisorError)(reply.error)
    return msgspec.msgpack.decode(reply.result, type=type(request).Reply)


def relay(runtime_dir: Path, data: bytes) -> bytes:
    """Pass a remote request to this host's supervisor; its reply, encoded (blocking)."""
    request_id = control.request_id_of(data)
    try:
        request = control.decode_request(data)
        with control.ControlClient(runtime_dir) as client:
            result = client.call(request, timeout=120)
        raw = control.encode(result) if result is not None else b"\xc0"
        return control.encode(control.Reply(id=request.id, ok=True, result=msgspec.Raw(raw)))
    except AgentTeamsError as exc:
        return control.encode(
            control.Reply(id=request_id, ok=False, error=exc.message, kind=control.kind_of(exc))
        )
