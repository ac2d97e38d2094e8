"""The supervisor's side of the lead: its inbox, and a lead agent that may run.

The supervisor always owns ``team-lead``'s doorbell. Each wake (and the fallback poll)
makes it look at what arrived in the lead's inbox since it last looked (a cursor, so old
unread reports cost nothing) and act on it (:mod:`supervisor.lead_inbox`). While a lead
agent runs, the wake is passed on to it and its messages are its own; when its process
ends (a pidfd in the loop), its subagents are stopped and the supervisor answers for the
lead again.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from ipc.errors import AgentTeamsError
from ipc.inbox_scan import Cursor, Scanned, archive_scanned, mark_scanned, scan
from ipc.launch import POLL_INTERVAL
from ipc.mailbox import Mailbox, archive_threshold
from ipc.osproc import pidfd_open
from ipc.schemas import LEAD_NAME
from ipc.wake import LEAD_AGENT, WakeListener
from supervisor import lead_inbox
from supervisor.states import TeammateState

if TYPE_CHECKING:
    from supervisor.daemon import Supervisor

log = logging.getLogger("agentteams.supervisor")


class LeadDesk:
    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self.mailbox = Mailbox(sup.root, sup.team, LEAD_NAME)
        self.cursor = Cursor()
        self.flips = 0  # read flags flipped in place since the last full pass
        self.checks, self.check_seconds = 0, 0.0  # what the looks cost (the soak watches it)
        self.pid: int | None = None  # a running lead agent
        self.pidfd: int | None = None
        self.doorbell = WakeListener(sup.ctx, sup.runtime, LEAD_NAME) if sup.zmq else None
        if self.doorbell is not None:
            sup.reactor.add_reader(self.doorbell, self._on_wake)
        self._schedule()

    def _schedule(self) -> None:
        interval = self.sup.options.fallback_poll if self.sup.zmq else POLL_INTERVAL
        self.sup.reactor.call_later(interval, self._fallback)

    def _fallback(self) -> None:
        self.check()
        self._schedule()

    def _on_wake(self) -> None:
        assert self.doorbell is not None
        self.doorbell.drain()
        if self.pid is not None:
            self.sup.waker.wake(LEAD_AGENT)  # the lead agent reads its inbox itself
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
        try:
            new, cursor = scan(self.mailbox, self.cursor)
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s", exc.message)
            return
        options = self.sup.options
        policy = lead_inbox.Policy(
            plan_approval=options.plan_approval,
            lead_permission_mode=options.lead_permission_mode,
            lead_attached=self.pid is not None,
        )
        taken: list[Scanned] = []
        for entry in new:
            if entry.message.read:
                continue
            verdict = lead_inbox.judge(entry.message, policy)
            for action in verdict.actions:
                self._apply(action)
            if verdict.take:
                taken.append(entry)
        try:
            self.cursor = self._mark(taken, cursor) or Cursor()
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s; will look again", exc.message)
            return  # the cursor stays: these are seen again next time

    def _mark(self, taken: list[Scanned], cursor: Cursor) -> Cursor | None:
        """Flip the flags in place; returns the cursor to go on from (None: start over).
        Once the flips since the last pass reach both what the archive keeps and a quarter
        of the file, one streaming pass moves read messages to the archive instead: a pass
        costs the file's length and comes after a quarter of it in flips, so a flip costs
        at most four entries' worth on average, and the pass's memory is one chunk, however
        many unread reports pile up for a person."""
        if taken:
            self.flips += len(taken)
        if self.flips < max(archive_threshold(), cursor.count // 4):
            mark_scanned(self.mailbox, taken)
            return cursor
        self.flips = 0
        return archive_scanned(self.mailbox, taken, cursor)

    def _apply(self, action: lead_inbox.Action) -> None:
        children = self.sup.children
        if isinstance(action, lead_inbox.Idle):
            child = children.by_name.get(action.name)
            # A teammate of ours reports its state over its link (newer news than a message
            # read later); without links, or for Claude Code, the notification is the news.
            if not self.sup.zmq or (child is not None and child.spec.backend == "claude-code"):
                children.on_idle_notification(action.name)
            child = children.by_name.get(action.name)
            if child is not None and child.state != TeammateState.STOPPING:
                self.sup.files.inactive(action.name)
        elif isinstance(action, lead_inbox.ExitApproved):
            children.on_shutdown_approved(action.name, action.request_id)
        elif isinstance(action, lead_inbox.ExitRejected):
            children.on_shutdown_rejected(action.name, action.request_id, action.reason)
        elif isinstance(action, lead_inbox.AnswerPlan) and action.name in children.by_name:
            self.sup.messenger.send_body(LEAD_NAME, action.name, action.response)

    # ------------------------------------------------------------ a lead agent

    def attach(self, pid: int) -> None:
        self.detach()
        self.pidfd = pidfd_open(pid)
        if self.pidfd is None:
            return  # already gone
        self.pid = pid
        self.sup.reactor.add_reader(self.pidfd, self.detach)
        log.info("lead agent pid %d attached", pid)

    def detach(self) -> None:
        if self.pidfd is not None:
            self.sup.reactor.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None
        if self.pid is not None:
            log.info("lead agent pid %d gone; the supervisor answers for the lead again", self.pid)
            for child in list(self.sup.children.by_name.values()):
                if child.spec.parent == LEAD_NAME and child.alive:
                    self.sup.children.force_stop(child, 0.5)  # the lead's subagents die with it
        self.pid = None
        self.cursor = Cursor()  # look at everything again: it is ours once more

    def close(self) -> None:
        if self.doorbell is not None:
            self.doorbell.close()
