"""Members that are outside clients (an MCP session, ``backendType: "mcp"``): no process of
ours runs them, so the table's shutdown and answers reach them through their inbox and the
files, with or without a running supervisor."""

from __future__ import annotations

from ipc import answers
from ipc import operations as io
from ipc.clock import now_iso
from ipc.errors import NotFound
from ipc.replies import StopReply
from ipc.schemas import LEAD_NAME, Member, ShutdownApproved, ShutdownRejected, ShutdownRequest, parse_body
from supervisor.client import readers
from supervisor.client.handle import TeamHandle

BACKEND = "mcp"


def release_tasks(team: TeamHandle, name: str) -> list[str]:
    """Put ``name``'s in-progress tasks back to pending with no owner, and wake an idle
    teammate for each (as for a teammate that crashed)."""
    released = team.tasks.release_owner(name)
    if released and team.tasks.on_ready is not None:
        team.tasks.on_ready(released, "")
    return released


def shutdown(team: TeamHandle, member: Member, args: io.ShutdownTeammate) -> StopReply:
    """Asked through its inbox; by force, taken off the team (its tasks released): its
    process is not ours to stop."""
    if args.force:
        released = release_tasks(team, member.name)
        team.store.remove_member(member.name)
        freed = f"; tasks {', '.join(released)} released" if released else ""
        return StopReply(name=member.name, stopped=True, exit=f"removed from the team{freed}")
    reason = args.reason or "The lead asked you to shut down."
    sent = team.messenger.send_shutdown_request(LEAD_NAME, member.name, reason)
    return StopReply(
        name=member.name,
        stopped=False,
        exit=f"asked (request {sent['request_id']}); it leaves the team once its client approves",
    )


def answer_shutdown(team: TeamHandle, args: io.AnswerRequest, name: str) -> answers.Answered:
    """A member's answer to a shutdown request sent to it: approved, it tells the lead and
    leaves the team (its tasks released); rejected, it says why and keeps working. Only a
    request the lead sent it counts: a forged one, or one for another member, is not found."""
    verifier = readers.verifier(team.store, name)
    request = next(
        (
            body
            for message in reversed(team.inbox(name).read())
            if isinstance(body := parse_body(message.text), ShutdownRequest)
            and body.request_id == args.request_id
            and verifier.stands(message, body)
        ),
        None,
    )
    if request is None:
        raise NotFound(
            f"no shutdown request {args.request_id!r} for {name}; a member answers only the shutdown "
            "requests sent to it (plans and permissions are the lead's to answer)"
        )
    member = team.store.require_member(name)
    answer: ShutdownApproved | ShutdownRejected
    if args.approve:
        answer = ShutdownApproved(
            request_id=request.request_id,
            from_=name,
            timestamp=now_iso(),
            pane_id=member.tmux_pane_id,
            backend_type=member.backend_type if isinstance(member.backend_type, str) else "",
        )
    else:
        reason = args.feedback or "I am still working."
        answer = ShutdownRejected(
            request_id=request.request_id, from_=name, reason=reason, timestamp=now_iso()
        )
    team.messenger.send_body(name, LEAD_NAME, answer)  # to the lead, whatever the body says
    if args.approve:
        release_tasks(team, name)
        team.store.remove_member(name)
    return answers.Answered(
        request_id=request.request_id, agent=LEAD_NAME, approved=args.approve, type=type(answer).__name__
    )
