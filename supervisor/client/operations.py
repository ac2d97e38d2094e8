"""The table of team operations: each defined once, with an input Struct, an output Struct,
a docstring and one function over a :class:`~supervisor.client.handle.TeamHandle`.

The doors are views of this table: the command line (:mod:`supervisor.cli`), the Python
``Team``, and the MCP and HTTP doors, each mapping the one error hierarchy to its own form
(an exit code, an MCP tool error, an HTTP status) in one place. ``actor`` is who acts: the
team's lead side unless a door knows better (an MCP session joined as a member, ``send
--from``). Operations only a lead may do refuse a member.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from ipc import agent_side, answers, control, team_permissions, transcript_view, worktrees
from ipc import operations as io
from ipc.errors import Conflict, InvalidInput, NotFound, Timeout
from ipc.input_words import checked
from ipc.messaging import clean_recipient
from ipc.options import TeammateOptions
from ipc.paths import TASK_ID, normalise_agent_name, task_number
from ipc.permission_updates import as_object, parse_all
from ipc.readable import event_of, looked_at
from ipc.replies import SpawnReply, StopReply, SubagentResult
from ipc.schemas import LEAD_NAME, Task
from ipc.task_rules import ClaimResult, why_not
from ipc.usage import TeamUsage, team_usage
from supervisor.client import agent_log, members, outsiders, readers
from supervisor.client.handle import TeamHandle
from supervisor.client.members import SUBAGENT_PREFIX, member_infos
from supervisor.client.ps import TeamTree, elsewhere, team_tree
from supervisor.client.waiting import take_for

In = TypeVar("In", bound=msgspec.Struct)
Out = TypeVar("Out", bound=msgspec.Struct)


@dataclass(frozen=True)
class Operation(Generic[In, Out]):
    name: str
    input: type[In]
    output: type[Out]
    run: Callable[[TeamHandle, In, str], Out]
    writes: bool  # it changes the team (HTTP: not a GET)
    lead_only: bool  # a member acting as itself may not (spawn, stop, answer)

    @property
    def doc(self) -> str:
        return (self.run.__doc__ or "").strip()

    def __call__(self, team: TeamHandle, args: In, actor: str = LEAD_NAME) -> Out:
        if self.lead_only and actor != LEAD_NAME:
            raise InvalidInput(f"{self.name} is the lead's to do; {actor} is a member of the team")
        if self.writes and actor == LEAD_NAME:  # never an agent's tool
            agent_side.refuse_lead(self.name, team.supervisor_pid())
        return self.run(team, checked(self.name, self.input, args), actor)


TABLE: dict[str, Operation[Any, Any]] = {}


def operation(
    name: str, input: type[In], output: type[Out], *, writes: bool = False, lead_only: bool = False
) -> Callable[[Callable[[TeamHandle, In, str], Out]], Operation[In, Out]]:
    def register(run: Callable[[TeamHandle, In, str], Out]) -> Operation[In, Out]:
        op = Operation(name, input, output, run, writes, lead_only)
        TABLE[name] = op
        return op

    return register


def _member_or_lead(team: TeamHandle, name: str) -> str:
    """``name`` as a member of the team (the lead always is)."""
    name = clean_recipient(name)
    if name != LEAD_NAME:
        team.store.require_member(name)
    return name


def _member_name(name: str) -> str:
    """A member's name as every operation reads it: '@ada' is ada."""
    return normalise_agent_name(clean_recipient(name))


def _has_text(text: str, what: str) -> None:
    if not text.strip():  # a blank message still wakes its reader, for nothing
        raise InvalidInput(f"{what} needs text; give what to say")


def task_id(value: str) -> str:
    if not TASK_ID.fullmatch(value):
        raise InvalidInput(f"task id {value!r} is not a task number like '7'")
    return task_number(value)


# ---------------------------------------------------------------- the team


@operation("list_members", io.NoInput, io.Members)
def list_members(team: TeamHandle, args: io.NoInput, actor: str) -> io.Members:
    """The team's members (the lead first), with what the running supervisor knows of each."""
    return io.Members(members=member_infos(team))


@operation("team_status", io.NoInput, io.TeamSummary)
def team_status(team: TeamHandle, args: io.NoInput, actor: str) -> io.TeamSummary:
    """The team at a glance: members, task counts, waiting requests, whether it is up."""
    config = team.config()
    counts = io.TaskCounts()
    for t in team.tasks.list(include_internal=False):
        if t.failed:
            counts.failed += 1
        elif t.status in ("pending", "in_progress", "completed"):
            setattr(counts, t.status, getattr(counts, t.status) + 1)
    return io.TeamSummary(
        team=team.name,
        description=config.description_text,
        up=team.is_up(),
        supervisor=team.supervisor_pid(),
        members=member_infos(team),
        tasks=counts,
        pending_requests=len(team.requests_waiting()),
    )


# ---------------------------------------------------------------- messages


@operation("send_message", io.SendMessage, io.Sent, writes=True)
def send_message(team: TeamHandle, args: io.SendMessage, actor: str) -> io.Sent:
    """Send a message to a member ('*': everyone but the sender). It lands in their inbox and
    wakes them. An unknown recipient is refused, naming the members."""
    sender = _member_or_lead(team, actor)
    _has_text(args.text, "a message")
    color = None if sender == LEAD_NAME else (team.store.require_member(sender).color_name or None)
    if args.to == "*":
        response = team.messenger.broadcast(sender, args.text, args.summary, color=color)
    else:
        response = team.messenger.send_message(sender, args.to, args.text, args.summary, color=color)
    return msgspec.convert(response, io.Sent)


@operation("read_inbox", io.ReadInbox, io.Messages, writes=True)
def read_inbox(team: TeamHandle, args: io.ReadInbox, actor: str) -> io.Messages:
    """Messages in an inbox, oldest first. Reading your own unread messages marks them read
    (they have been handed to you); looking at someone else's changes nothing."""
    name = _member_or_lead(team, args.name or actor)
    box = team.inbox(name)
    if args.unread_only and args.mark_read and name == clean_recipient(actor):
        return io.Messages(messages=box.mark_all_read())
    return io.Messages(messages=box.unread() if args.unread_only else box.read())


@operation("wait_for_messages", io.WaitForMessages, io.Events, writes=True)
def wait_for_messages(team: TeamHandle, args: io.WaitForMessages, actor: str) -> io.Events:
    """Wait for your inbox: returns the moment a message lands (marked read), as readable
    events, or no events after ``timeout_s``. Woken by your doorbell, or by the inbox file
    being written for writers that cannot ring; never a sleep loop. It touches only files
    and the handle's bell, so it may run beside other calls on the same handle. On the lead
    side, what a running supervisor acts on (idle notifications, shutdown answers) stays its
    own, plan and permission requests stay pending until answered (each shown once)."""
    name = _member_or_lead(team, actor)
    if name == LEAD_NAME:  # what it would take is the running lead's; a look takes nothing
        team.require_no_lead_agent(f"its messages are its own ('agentteams inbox {team.name} team-lead')")
    box, bell = team.inbox(name), team.bell(name)
    verifier = readers.verifier(team.store, name)  # forged entries come as notices of refusal
    deadline = time.monotonic() + args.timeout_s
    while True:
        seen = bell.rings()
        if bell.cancelled():
            raise Timeout("the wait was cancelled")
        taken = take_for(team, box, bell, name)
        remaining = deadline - time.monotonic()
        if taken or remaining <= 0:
            return io.Events(events=[event_of(m, verifier) for m in taken])
        bell.wait(seen, min(remaining, bell.fallback_poll))


@operation("team_messages", io.MessageQuery, io.TeamMessages)
def team_messages(team: TeamHandle, args: io.MessageQuery, actor: str) -> io.TeamMessages:
    """Every message in the team's inboxes (the lead's and each member's), merged oldest
    first, protocol messages spelled out as readable events. Changes nothing: what was
    unread stays unread."""
    names = [LEAD_NAME, *(m.name for m in team.config().teammates())]
    looks = {name: readers.verifier(team.store, name) for name in names}
    found = [
        io.TeamMessage(to=name, read=m.read, event=looked_at(m, reader))
        for name, reader in looks.items()
        if (box := team.state.mailbox(name)).exists()
        for m in box.read()
    ]
    found.sort(key=lambda m: m.event.timestamp)
    return io.TeamMessages(messages=found[-args.limit :] if args.limit else found)


# ---------------------------------------------------------------- tasks


@operation("task_create", io.TaskCreate, Task, writes=True)
def task_create(team: TeamHandle, args: io.TaskCreate, actor: str) -> Task:
    """Create a task; an idle teammate that can claim it is woken for it (or ``owner`` told)."""
    blockers = [task_id(b) for b in args.blocked_by]
    for blocker in blockers:
        team.tasks.get(blocker)  # refuse before creating anything
    spec = (args.subject, args.description, args.active_form, args.metadata, blockers)
    return team.tasks.create_many([spec], owner=args.owner, by=actor)[0]


@operation("task_list", io.TaskQuery, io.TaskList)
def task_list(team: TeamHandle, args: io.TaskQuery, actor: str) -> io.TaskList:
    """The team's tasks by id; a task file that cannot be read is skipped and reported."""
    tasks = team.tasks.list(include_internal=args.include_internal)
    if args.status == "failed":
        tasks = [t for t in tasks if t.failed]
    elif args.status is not None:
        tasks = [t for t in tasks if t.status == args.status and not t.failed]
    return io.TaskList(tasks=tasks)


@operation("task_get", io.TaskRef, Task)
def task_get(team: TeamHandle, args: io.TaskRef, actor: str) -> Task:
    """One task by id."""
    return team.tasks.get(task_id(args.id))


@operation("task_claim", io.TaskClaim, ClaimResult, writes=True)
def task_claim(team: TeamHandle, args: io.TaskClaim, actor: str) -> ClaimResult:
    """Claim a task for yourself (or ``agent``): owned by you and in progress. Without an id,
    the lowest-numbered task that can be claimed now."""
    agent = _member_or_lead(team, args.agent or actor)
    if args.id is None:
        task = team.tasks.claim_next(agent)
        if task is None:
            raise NotFound("no task can be claimed now: each is taken, blocked, failed or completed")
        return ClaimResult(success=True, task=task)
    result = team.tasks.claim(task_id(args.id), agent, check_agent_busy=args.check_busy)
    if result.reason == "task_not_found":  # as task_get says it (HTTP: 404, not 409)
        raise NotFound(f"task #{args.id} does not exist in team {team.name!r}")
    if not result.success:
        raise Conflict(f"cannot claim task #{args.id} for {agent}: {result.reason} ({why_not(result)})")
    return result


@operation("task_update", io.TaskUpdate, io.TaskChanged, writes=True)
def task_update(team: TeamHandle, args: io.TaskUpdate, actor: str) -> io.TaskChanged:
    """Change a task. A new owner is told in its inbox and woken; tasks the change made
    claimable wake an idle teammate. Removing a dependency that is not there is refused."""
    change = team.tasks.change(
        task_id(args.id),
        status=args.status,
        subject=args.subject,
        description=args.description,
        active_form=args.active_form,
        owner=args.owner,
        add_blocks=args.add_blocks,
        add_blocked_by=args.add_blocked_by,
        remove_blocks=args.remove_blocks,
        remove_blocked_by=args.remove_blocked_by,
        metadata=args.metadata,
        by=clean_recipient(actor),
    )
    return io.TaskChanged(task=change.task, unblocked=change.unblocked)


@operation("task_delete", io.TaskRef, io.TaskDeleted, writes=True)
def task_delete(team: TeamHandle, args: io.TaskRef, actor: str) -> io.TaskDeleted:
    """Delete a task and every reference to it; its id is never issued again."""
    unblocked = team.tasks.delete(task_id(args.id), by=actor)
    return io.TaskDeleted(deleted=args.id, unblocked=unblocked)


# ---------------------------------------------------------------- teammates


@operation("spawn_teammate", TeammateOptions, SpawnReply, writes=True, lead_only=True)
def spawn_teammate(team: TeamHandle, args: TeammateOptions, actor: str) -> SpawnReply:
    """Start a teammate; everything is checked before anything is written. A taken name is
    refused, or with ``rename`` gets a suffix (``renamed_from`` then says the name asked for)."""
    options = args.checked()
    team.require_up_for(options.host)
    if not options.rename:
        team.store.check_new_member(options.name)
    reply: SpawnReply = team.call(control.Spawn(id=control.new_id(), options=options), timeout=30)
    return reply


@operation("shutdown_teammate", io.ShutdownTeammate, StopReply, writes=True, lead_only=True)
def shutdown_teammate(team: TeamHandle, args: io.ShutdownTeammate, actor: str) -> StopReply:
    """Ask a teammate to shut down; it leaves the team once it approves. ``force`` stops it
    after ``grace`` seconds regardless (a member that is an outside client, such as an MCP
    session, is taken off the team)."""
    member = team.member(clean_recipient(args.name))
    if member is None:  # named with every member, on whichever host (a supervisor knows its own)
        team.store.require_member(args.name)
    if member is not None and member.backend_type == outsiders.BACKEND:
        return outsiders.shutdown(team, member, args)
    team.require_up_for(team.member_host(args.name))
    request = control.Shutdown(
        id=control.new_id(), name=_member_name(args.name), force=args.force, grace=args.grace
    )
    if args.reason:
        request.reason = args.reason
    reply: StopReply = team.call(request, timeout=args.grace + 15)
    kept = worktrees.find(team.paths, reply.name)  # the supervisor removed it unless it had changes
    if kept is not None:
        reply.worktree = kept.path
    return reply


@operation("diff", io.MemberRef, worktrees.WorktreeDiff)
def diff(team: TeamHandle, args: io.MemberRef, actor: str) -> worktrees.WorktreeDiff:
    """What a teammate spawned with ``isolation: worktree`` changed in its worktree, against
    the commit it started from: changed files, commits on its branch, and a unified diff.
    Its worktree is kept after it left while it has changes, so this works then too."""
    team.store.read()  # NotFound for a team that does not exist
    return worktrees.diff(team.paths, clean_recipient(args.name))


@operation("restart_teammate", io.MemberRef, SpawnReply, writes=True, lead_only=True)
def restart_teammate(team: TeamHandle, args: io.MemberRef, actor: str) -> SpawnReply:
    """Start a member that failed or exited again."""
    name = _member_name(args.name)  # as shutdown reads it: '@ada' is ada
    team.require_up_for(team.member_host(name))
    reply: SpawnReply = team.call(control.Restart(id=control.new_id(), name=name), timeout=30)
    return reply


@operation("background_subagent", io.SubagentRef, SubagentResult, writes=True, lead_only=True)
def background_subagent(team: TeamHandle, args: io.SubagentRef, actor: str) -> SubagentResult:
    """Move a running synchronous subagent to the background: its parent stops waiting (its
    Agent call returns async_launched) and hears of the result as a <task-notification>."""
    return members.to_background(team, args.subagent)


@operation("set_mode", io.SetMode, io.ModeSet, writes=True, lead_only=True)
def set_mode(team: TeamHandle, args: io.SetMode, actor: str) -> io.ModeSet:
    """Set a teammate's permission mode (Claude Code's mode_set_request): it takes it before
    its next turn, tells the lead, and keeps it when restarted."""
    return io.ModeSet(name=team_permissions.set_mode(team.messenger, args.name, args.mode), mode=args.mode)


@operation("update_permissions", io.UpdatePermissions, io.PermissionsUpdated, writes=True, lead_only=True)
def update_permissions(team: TeamHandle, args: io.UpdatePermissions, actor: str) -> io.PermissionsUpdated:
    """Add rules (allow, deny or ask) or directories to a running teammate, or to every one
    with ``*`` (Claude Code's team_permission_update), for the rest of its session; or send it
    Claude Code's permission updates as they are (``updates``: setMode, removeRules…), each
    checked first."""
    changes = team_permissions.updates(args.rules, args.behavior, args.directories, args.updates)
    names = team_permissions.update_permissions(team.messenger, args.name, changes)
    return io.PermissionsUpdated(names=names, updates=changes)


@operation("push", io.Push, io.Pushed, writes=True, lead_only=True)
def push(team: TeamHandle, args: io.Push, actor: str) -> io.Pushed:
    """An in-memory message to a running teammate: the first thing its loop takes next
    (nothing on disk: a message that must survive a restart goes to its inbox)."""
    _has_text(args.text, "a push")
    name = _member_name(args.name)
    team.require_up_for(team.member_host(name))
    team.call(control.Push(id=control.new_id(), name=name, text=args.text), timeout=10)
    return io.Pushed(pushed=name)


# ---------------------------------------------------------------- requests, usage, processes


@operation("list_requests", io.NoInput, io.Requests)
def list_requests(team: TeamHandle, args: io.NoInput, actor: str) -> io.Requests:
    """Plan approval and permission requests waiting for the lead, oldest first."""
    return io.Requests(requests=[body for _, body in team.requests_waiting()])


@operation("answer_request", io.AnswerRequest, answers.Answered, writes=True)
def answer_request(team: TeamHandle, args: io.AnswerRequest, actor: str) -> answers.Answered:
    """Answer a request. The lead approves or denies a teammate's plan or permission
    request (the teammate goes on, revises, or does without the tool); a member answers a
    shutdown request sent to it (approving, it leaves the team)."""
    if clean_recipient(actor) != LEAD_NAME:
        return outsiders.answer_shutdown(team, args, _member_or_lead(team, actor))
    updates = args.permission_updates
    if updates is not None:  # checked, then written as Claude Code writes them
        updates = [as_object(u) for u in parse_all(updates)]
    return answers.answer(
        team.messenger,
        args.request_id,
        approve=args.approve,
        feedback=args.feedback,
        updated_input=args.updated_input,
        permission_mode=args.permission_mode,
        permission_updates=updates,
        always=args.always,
        stopped=team.stopped_here(),
    )


@operation("read_log", io.ReadLog, io.Log)
def read_log(team: TeamHandle, args: io.ReadLog, actor: str) -> io.Log:
    """The last lines of the supervisor's log, or of an agent's. Logs live with the team's
    runtime files: they go when the team is deleted."""
    team.store.read()  # NotFound for a team that does not exist
    try:
        path, data = agent_log.read(team.paths, normalise_agent_name(args.name) if args.name else "")
    except FileNotFoundError:
        if args.name and not args.name.startswith(SUBAGENT_PREFIX):
            _member_or_lead(team, args.name)  # a name that is no member is named so, with the members
        whose = f"for {args.name!r}" if args.name else "of the supervisor"
        raise NotFound(
            f"no log {whose} in team {team.name!r}: it has not run since the team's runtime files were "
            f"made; 'agentteams logs {team.name}' shows the supervisor's"
        ) from None
    text = data.decode(errors="replace")
    if args.lines:
        text = "".join(text.splitlines(keepends=True)[-args.lines :])
    return io.Log(path=str(path), text=text, size=len(data))


@operation("read_transcript", io.ReadTranscript, io.Transcript)
def read_transcript(team: TeamHandle, args: io.ReadTranscript, actor: str) -> io.Transcript:
    """An agent's conversation, the last entries of its transcript: its turns, the tools it
    called with their input, and what they returned (a long result cut, the file keeps it)."""
    team.store.read()  # NotFound for a team that does not exist
    path = team.paths.transcript(_member_name(args.name))
    if not path.exists():
        _member_or_lead(team, args.name)  # NotFound for a name that is no member
        raise NotFound(f"{args.name} has no transcript yet in team {team.name!r}: it has not taken a turn")
    entries = transcript_view.last_entries(path, args.limit)
    return io.Transcript(name=args.name, path=str(path), entries=entries)


@operation("usage", io.NoInput, TeamUsage)
def usage(team: TeamHandle, args: io.NoInput, actor: str) -> TeamUsage:
    """Tokens and cost of every model call the team's agents made, per agent and model."""
    team.store.read()  # NotFound for a team that does not exist
    return team_usage(team.paths)


@operation("ps", io.NoInput, TeamTree)
def ps(team: TeamHandle, args: io.NoInput, actor: str) -> TeamTree:
    """The team's processes: supervisor, fork server, teammates and their tools, with state,
    CPU, memory, unread messages and current task; in a team on the engine, the members of
    the other hosts too, with their host."""
    tree = team_tree(team)
    elsewhere(team, tree)
    return tree
