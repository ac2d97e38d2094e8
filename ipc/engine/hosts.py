"""Each host's record on the engine (the key ``host.{name}``, written by that host's
supervisor) and whether a supervisor answers for a host name. The supervisor claims its
name by them; a client asks them before it removes the team from under other hosts."""

from __future__ import annotations

import time

import msgspec

from ipc import control
from ipc.engine import remote
from ipc.engine.team import EngineTeam, Entry
from ipc.errors import NotRunning, TransportError

PREFIX = "host."
ASK_TIMEOUT = 3.0  # s: the holder of a host name asked whether it is there
# A claim's supervisor serves the name milliseconds after it wins; one that went without
# writing "down" never does: asked this often, this far apart (s), before it counts as gone.
ASKS = 3
PAUSE = 0.5


class HostRecord(msgspec.Struct, forbid_unknown_fields=False):
    host: str
    pid: int = 0
    beat: int = 0
    state: str = "up"  # up | down (stopped cleanly) | dead (lease expired)
    by: str = ""  # the host that found it dead


def record(entry: Entry | None) -> HostRecord | None:
    try:
        return msgspec.json.decode(entry.data, type=HostRecord) if entry is not None else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def answered(engine: EngineTeam, host: str, asks: int) -> bool:
    """Whether a supervisor answers for ``host``, asked up to ``asks`` times :data:`PAUSE`
    apart (no responder each time: False). An answer that is a refusal raises, as does a
    wait past :data:`ASK_TIMEOUT`."""
    for ask in range(asks):
        if ask:
            time.sleep(PAUSE)
        try:
            remote.call(engine, host, control.Status(id=control.new_id()), ASK_TIMEOUT)
        except NotRunning:
            continue
        return True
    return False


def up_elsewhere(engine: EngineTeam, here: str) -> list[str]:
    """The hosts but ``here`` whose record says up and whose supervisor is not gone. A record
    says up for good when its supervisor died with no other left to mark it dead: asked, it
    answers nothing, and that host is not counted."""
    found = []
    for key in engine.keys(PREFIX):
        host = key.removeprefix(PREFIX)
        last = record(engine.get(key, fresh=True)) if host != here else None
        if last is None or last.state != "up":
            continue
        try:
            gone = not answered(engine, host, ASKS)
        except TransportError:
            raise  # the engine away: nothing can be told
        except Exception:  # a wait past ASK_TIMEOUT, a refusal, an answer we cannot read: there
            gone = False
        if not gone:
            found.append(host)
    return sorted(found)
