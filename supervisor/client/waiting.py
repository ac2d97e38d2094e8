"""What a wait for messages takes from an inbox (the table's ``wait_for_messages``).

A member takes everything unread. The lead side shares ``team-lead``'s inbox with others:
while the team's supervisor runs, the protocol messages it acts on (idle notifications,
shutdown answers) are its to take, and plan and permission requests stay unread until they
are answered (``answer_request`` finds them there), so they are shown once, not taken.
"""

from __future__ import annotations

import msgspec

from ipc import answers
from ipc.bell import Bell
from ipc.mailbox import Mailbox
from ipc.schemas import LEAD_NAME, InboxMessage, parse_body
from supervisor.client.handle import TeamHandle

SUPERVISOR_TAKES = frozenset({"idle_notification", "shutdown_approved", "shutdown_rejected"})
ANSWERED_LATER = frozenset({"plan_approval_request", "permission_request"})


def kind(message: InboxMessage) -> str:
    """``message`` for plain text, else the protocol message's type."""
    body = parse_body(message.text)
    return "message" if body is None else str(msgspec.to_builtins(body).get("type", "message"))


def take_for(team: TeamHandle, box: Mailbox, bell: Bell, name: str) -> list[InboxMessage]:
    """What ``name`` is handed now from ``box`` (marked read, but for requests shown once)."""
    if name != LEAD_NAME:
        return box.mark_all_read()
    supervised = team.is_up()
    taken = box.take_where(
        lambda m: (k := kind(m)) not in ANSWERED_LATER and not (supervised and k in SUPERVISOR_TAKES)
    )
    pending = answers.pending(box, team.store, team.stopped_here())
    requests = [m for m, body in pending if body.request_id not in bell.shown]
    bell.shown.update(body.request_id for _, body in pending)
    return requests + taken
