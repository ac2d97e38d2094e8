"""The supervisor's side of the lead: its inbox, and a lead agent that may run.

The supervisor always owns ``team-lead``'s doorbell. Each wake (and the fallback poll)
makes it look at what arrived in the lead's inbox since it last looked (a cursor, so old
unread reports cost nothing) and act on it (:mod:`supervisor.daemon.lead_inbox`). While a lead
agent runs, the wake is passed on to it and its messages are its own; when its process
ends (a pidfd in the loop), its subagents are stopped and the supervisor answers for the
lead again.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time

from ipc import trust
from ipc.errors import AgentTeamsError
from ipc.inbox_scan import Cursor, Scanned, archive_scanned, flip_in_place, identity, scan
from ipc.launch import POLL_INTERVAL, SupervisorOptions
from ipc.mailbox import archive_threshold
from ipc.osproc import pidfd_open
from ipc.schemas import LEAD_NAME, InboxMessage, parse_body
from ipc.team_state import TeamState
from ipc.wake import LEAD_AGENT, WakeListener
from supervisor.daemon import lead_inbox
from supervisor.daemon.children import Children
from supervisor.daemon.reactor import Reactor
from supervisor.daemon.router import Router
from supervisor.daemon.team_files import TeamFiles

log = logging.getLogger("agentteams.supervisor")


class LeadDesk:
    def __init__(
        self,
        reactor: Reactor,
        state: TeamState,
        options: SupervisorOptions,
        children: Children,
        files: TeamFiles,
        router: Router,
        doorbell: WakeListener | None,
    ) -> None:
        """``doorbell``: the lead's own (None in poll mode: the lead's inbox is polled)."""
        self.reactor = reactor
        self.state = state
        self.options = options
        self.children = children
        self.files = files
        self.router = router
        self.mailbox = state.mailbox(LEAD_NAME)
        self.cursor = Cursor()
        self.engine_cursor = 0  # the highest stream sequence judged (a team on the engine)
        self.flips = 0  # read flags flipped in place since the last full pass
        self.checks, self.check_seconds = 0, 0.0  # what the looks cost (the soak watches it)
        self.pid: int | None = None  # a running lead agent
        self.pidfd: int | None = None
        self.doorbell = doorbell
        self.verifier = trust.Verifier(state.config, LEAD_NAME)
        if self.doorbell is not None:
            reactor.add_reader(self.doorbell, self._on_wake)
        self._schedule()

    def _schedule(self) -> None:
        interval = self.options.fallback_poll if self.doorbell is not None else POLL_INTERVAL
        self.reactor.call_later(interval, self._fallback)

    def _fallback(self) -> None:
        self.check()
        self._schedule()

    def _on_wake(self) -> None:
        assert self.doorbell is not None
        self.doorbell.drain()
        self.woken()

    def woken(self) -> None:
        """The lead's doorbell rang (here, or on the engine from any host)."""
        if self.pid is not None:
            self.router.waker.wake(LEAD_AGENT)  # the lead agent reads its inbox itself
        self.check()

    def check(self) -> None:
        """Act on what arrived since the last look; take what is the supervisor's to take."""
        started = time.perf_counter()
        try:
            self._check()
        finally:
            self.checks += 1
            self.check_seconds += time.perf_counter() - started

    def _check(self) -> None:
        if self.state.engine is not None:
            self._check_engine()
            return
        try:
            new, cursor = scan(self.mailbox, self.cursor)
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s", exc.message)
            return
        policy = self._policy()
        taken: list[Scanned] = []
        for entry in new:
            if entry.message.read:
                continue
            verdict = self._judge(entry.message, policy)
            for action in verdict.actions:
                self._apply(action)
            if verdict.take:
                taken.append(entry)
            else:  # left for a person: after a rewrite, unread entries up to it are not new
                cursor = dataclasses.replace(cursor, last=identity(entry.message), last_raw=entry.raw)
        try:
            self.cursor = self._mark(taken, cursor) or Cursor(last=cursor.last, last_raw=cursor.last_raw)
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s; will look again", exc.message)
            return  # the cursor stays: these are seen again next time

    def _check_engine(self) -> None:
        """The same judgement over an inbox in the engine, where each host's supervisor
        answers for its own teammates: what another host's teammate sent is that host's."""
        try:
            unread = self.mailbox.unread_entries(after=self.engine_cursor)
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s", exc.message)
            return
        policy = self._policy()
        taken: list[tuple[int, InboxMessage]] = []
        for seq, message in unread:
            if message.from_ not in self.children.by_name:
                continue
            verdict = self._judge(message, policy)
            for action in verdict.actions:
                self._apply(action)
            if verdict.take:
                taken.append((seq, message))
        self.engine_cursor = max([self.engine_cursor, *(seq for seq, _ in unread)])
        if taken:
            try:
                self.mailbox.mark_positions([s for s, _ in taken], [m for _, m in taken])
            except AgentTeamsError as exc:
                log.warning("lead inbox: %s; will look again", exc.message)
                self.engine_cursor = 0

    def _judge(self, message: InboxMessage, policy: lead_inbox.Policy) -> lead_inbox.Verdict:
        """What to do with one entry, verified first: nothing it claims is acted on unless
        its sender may say it (ipc.trust)."""
        reason = trust.refusal(message, parse_body(message.text), self.verifier.check(message), LEAD_NAME)
        verdict = lead_inbox.judge(message, policy, reason)
        if verdict.take and reason is None:
            self.verifier.taken(message)
        return verdict

    def _policy(self) -> lead_inbox.Policy:
        return lead_inbox.Policy(
            plan_approval=self.options.plan_approval,
            lead_permission_mode=self.options.lead_permission_mode,
            lead_attached=self.pid is not None,
        )

    def _mark(self, taken: list[Scanned], cursor: Cursor) -> Cursor | None:
        """Flip the flags in place; returns the cursor to go on from (None: start over).
        Once the flips since the last pass reach both what the archive keeps and a quarter
        of the file, one streaming pass moves read messages to the archive instead: a pass
        costs the file's length and comes after a quarter of it in flips, so a flip costs
        at most four entries' worth on average, and the pass's memory is one chunk, however
        many unread reports pile up for a person."""
        if taken:
            self.flips += len(taken)
        if self.flips < max(archive_threshold(), cursor.count // 4) and flip_in_place(self.mailbox, taken):
            return cursor
        # Due, or a flag that cannot be flipped in place (across a page boundary: one in about
        # a thousand where entries fall at random; or moved): the pass flips it in its rewrite. Reading the whole file
        # and decoding every unread entry to flip one instead made the supervisor's memory
        # follow the pile (a soak: 8 MB of small objects at 13k unread, arenas kept after).
        self.flips = 0
        return archive_scanned(self.mailbox, taken, cursor)

    def _apply(self, action: lead_inbox.Action) -> None:
        children = self.children
        if isinstance(action, lead_inbox.Idle):
            child = children.by_name.get(action.name)
            # A teammate of ours reports its state over its link (newer news than a message
            # read later); without links, or for Claude Code, the notification is the news.
            if self.doorbell is None or (child is not None and child.spec.runs_claude):
                children.on_idle_notification(action.name)
            # isActive is the teammate's own to write (a notification read late must not
            # unmark the turn it has started since).
        elif isinstance(action, lead_inbox.ExitApproved):
            children.on_shutdown_approved(action.name, action.request_id)
        elif isinstance(action, lead_inbox.ExitRejected):
            children.on_shutdown_rejected(action.name, action.request_id, action.reason)
        elif isinstance(action, lead_inbox.Refuse):
            trust.record_refusal(self.state.paths, LEAD_NAME, action.message, action.reason)
        elif isinstance(action, lead_inbox.AnswerPlan) and action.name in children.by_name:
            self.state.messenger.send_body(LEAD_NAME, action.name, action.response)

    # ------------------------------------------------------------ a lead agent

    def attach(self, pid: int) -> None:
        self.detach()
        self.pidfd = pidfd_open(pid)
        if self.pidfd is None:
            return  # already gone
        self.pid = pid
        self.reactor.add_reader(self.pidfd, self.detach)
        log.info("lead agent pid %d attached", pid)

    def detach(self) -> None:
        if self.pidfd is not None:
            self.reactor.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None
        if self.pid is not None:
            log.info("lead agent pid %d gone; the supervisor answers for the lead again", self.pid)
            for child in list(self.children.by_name.values()):
                if child.spec.parent == LEAD_NAME and child.alive:
                    self.children.force_stop(child, 0.5)  # the lead's subagents die with it
        self.pid = None
        self.cursor = Cursor()  # look at everything again: it is ours once more
        self.engine_cursor = 0

    def close(self) -> None:
        if self.doorbell is not None:
            self.doorbell.close()
