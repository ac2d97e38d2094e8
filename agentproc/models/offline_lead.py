"""The offline lead: a deterministic lead model, so ``agentteams lead`` runs without a key.

Given a goal that lists numbered steps (in the prompt, or in a file the prompt names with
``Plan file: PATH``)::

    Teammates: 2
    1. Fetch the data: `curl -o raw.csv …`
    2. Clean it [after 1]: `python clean.py`
    3. Check it [after 2] [subagent]: `python check.py`

(a step marked ``[subagent]`` is handed by its teammate to a subagent)

it creates one task per step with its blockers (as the task is created, so no teammate can
claim a step early), spawns the teammates, approves concrete plans and every permission
request, follows the reports, and when every task is completed (or none can go on) asks
the teammates it spawned to shut down, tries to delete the team once they have gone (which
only a team made for this lead, with every task completed, allows), and answers with a
summary. A goal with no steps on a team that has open tasks (a retry) takes those up. A
goal it cannot plan is a failed turn. It works only through its tools, as a language model
would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentproc import checkins
from agentproc.models.base import ModelContext, Turn, TurnOutcome
from agentproc.tools import ToolBox
from ipc.plans import review_plan
from ipc.schemas import InboxMessage, PermissionRequest, PlanApprovalRequest, parse_body

STEP = re.compile(
    r"^\s*(?P<n>\d+)[.)]\s+(?P<subject>[^\[`:]+?)"
    r"(?:\s*\[\s*(?:after\s+(?P<after>[\d,\s]+)|(?P<subagent>subagent))\s*\])*"  # in either order
    r"\s*(?::\s*`(?P<command>[^`]+)`)?\s*$",
    re.IGNORECASE,
)
# A numbered line with a command in backticks, or ending in a marker's bracket, that STEP
# cannot read (a mistyped marker, a ':' in the subject, no ':' before the command): refused
# rather than dropped. Numbered prose without either is not a step and is passed over.
STEP_LIKE = re.compile(r"^\s*\d+[.)]\s+(?:.*`.*|.*\]\s*)$")
TEAMMATES = re.compile(r"^\s*teammates?\s*:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
PLAN_FILE = re.compile(r"^\s*plan file\s*:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
REPORT = re.compile(r"task #(\d+)", re.IGNORECASE)
DEFAULT_TEAMMATES = 3
MAX_TEAMMATES = 64  # what one goal asks for; a larger team is spawned by hand
HOW = (
    "List numbered steps, one per line, each optionally with its blockers and a command:\n"
    "  Teammates: 2\n  1. Fetch the data: `echo data > raw.txt`\n  2. Count it [after 1]: `wc -c raw.txt`\n"
    "(a step marked [subagent] is handed by its teammate to a subagent), "
    "or name a file that does: 'Plan file: plan.md'."
)


class PlanError(ValueError):
    """A goal the offline lead cannot turn into tasks; the message says why."""


@dataclass(frozen=True)
class Step:
    number: int
    subject: str
    after: tuple[int, ...] = ()
    command: str = ""
    subagent: bool = False  # its teammate hands the step to a subagent


def parse_steps(text: str) -> tuple[list[Step], int | None]:
    """The steps a goal lists and the teammates it asks for; PlanError if a step waits
    for one the list does not have before it, or a numbered line that ends as a step does
    cannot be read as one."""
    steps: list[Step] = []
    for line in text.splitlines():
        match = STEP.match(line)
        if match is None:
            if STEP_LIKE.match(line):
                raise PlanError(
                    f"cannot read the step {line.strip()!r}: write it as 'N. Subject [after M]"
                    " [subagent]: `command`', with no ':', '[' or '`' in the subject"
                )
            continue
        after = tuple(int(n) for n in re.findall(r"\d+", match["after"] or ""))
        command = (match["command"] or "").strip()
        steps.append(Step(int(match["n"]), match["subject"].strip(), after, command, bool(match["subagent"])))
    numbers = [s.number for s in steps]
    if len(set(numbers)) != len(numbers):
        raise PlanError("two steps have the same number; number them 1, 2, 3…")
    for step in steps:
        for n in step.after:
            if n not in numbers or n >= step.number:
                raise PlanError(
                    f"step {step.number} waits for step {n}, which is not an earlier step of the list"
                )
    wanted = TEAMMATES.search(text)
    if wanted and not 1 <= int(wanted[1]) <= MAX_TEAMMATES:
        raise PlanError(
            f"'Teammates: {wanted[1]}': give 1 to {MAX_TEAMMATES}, or leave the line out for {DEFAULT_TEAMMATES}"
        )
    return steps, int(wanted[1]) if wanted else None


class OfflineLead:
    def __init__(self, context: ModelContext) -> None:
        self.context = context
        self.task_ids: dict[int, str] = {}  # step number (counted on across goals) -> task id
        self.reports: dict[str, str] = {}  # task id -> the teammate's last report line
        self.asked: set[str] = set()  # teammates sent a shutdown request
        self.spawned: list[str] = []  # teammates it started: the only ones it sends away
        self.done = False
        self.unplanned = ""  # why the goal could not be taken on, until another goal is given

    @staticmethod
    def check_in(check: checkins.CheckIn, tools: ToolBox) -> bool:
        """A check-in on a synchronous subagent it waits for: the rule of agentproc.checkins."""
        return checkins.offline_answer(tools.ctx.name, check)

    # ------------------------------------------------------------ turns

    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        if turn.kind == "user":
            outcome = self._goal(turn.content, tools)
            self.unplanned = outcome.failure_reason
            return outcome
        for message in turn.batch:
            self._answer(message, tools)
        if self.unplanned:  # a message waiting does not make up for a goal it never took on
            return TurnOutcome(failure_reason=self.unplanned)
        return self._follow_up(tools)

    def _goal(self, text: str, tools: ToolBox) -> TurnOutcome:
        try:
            steps, teammates = parse_steps(self._plan_text(text, tools))
        except PlanError as exc:
            return _cannot(f"I cannot plan this: {exc}. {HOW}")
        if not steps:
            if self.task_ids:
                return TurnOutcome(final_text=self._summary(tools, "Progress so far"))
            return self._take_up_open_tasks(tools, teammates)
        if self.done:  # another goal after the last was done (a chat that keeps its team)
            self.done, self.asked, self.spawned = False, set(), []
        base = max(self.task_ids, default=0)  # a goal's steps are numbered from 1 again
        tools.call("TeamCreate", {"team_name": tools.ctx.team})
        for step in steps:
            args: dict[str, Any] = {
                "subject": step.subject,
                "description": f"Step {step.number} of the goal: {step.subject}",
                "addBlockedBy": [self.task_ids[base + n] for n in step.after],
            }
            if step.subagent:  # its prompt: the subject, and the command the subagent is to run
                prompt = f"{step.subject}: `{step.command}`" if step.command else step.subject
                args["metadata"] = {"subagent": prompt}
            elif step.command:
                args["metadata"] = {"command": step.command}
            created = tools.call("TaskCreate", args)
            if created.is_error:
                return _cannot(f"I could not create the task for step {step.number}: {created.content}")
            self.task_ids[base + step.number] = str(json.loads(created.content)["task"]["id"])
        self._spawn(tools, teammates or min(DEFAULT_TEAMMATES, len(steps)))
        return TurnOutcome()

    def _take_up_open_tasks(self, tools: ToolBox, teammates: int | None) -> TurnOutcome:
        """No steps: carry on with the team's open tasks (a failed one set back to pending,
        say), or ask for steps if there are none."""
        listing = json.loads(tools.call("TaskList", {}).content)["tasks"]
        open_ids = [str(t["id"]) for t in listing if t["status"] != "completed"]
        if not open_ids:
            if listing:  # a retry come too late: the team's teammates took the fixed task up themselves
                return _cannot(
                    f"every task of the team is completed, so there is nothing to carry on with. {HOW}"
                )
            return _cannot(f"I need steps to hand out. {HOW}")
        self.task_ids = {n: task_id for n, task_id in enumerate(open_ids, 1)}
        self._spawn(tools, teammates or min(DEFAULT_TEAMMATES, len(open_ids)))
        return TurnOutcome()

    def _plan_text(self, text: str, tools: ToolBox) -> str:
        named = PLAN_FILE.search(text)
        if named is None:
            return text
        path = tools.ctx.resolve(named[1])
        try:
            return text + "\n" + path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PlanError(f"cannot read the plan file {path}: {exc.strerror}") from None

    def _spawn(self, tools: ToolBox, count: int) -> None:
        present = {m.name for m in tools.ctx.messenger.store.read().teammates()}
        for i in range(1, count + 1):
            name = f"worker-{i}"
            if name in present:
                continue
            spawned = tools.call(
                "Agent",
                {
                    "description": f"teammate {name}",
                    "name": name,
                    "prompt": (
                        f"You are {name} of team {tools.ctx.team}. Claim open tasks from the task list one at a "
                        "time, run each task's command, mark it completed and report to team-lead; repeat until "
                        "no task is left."
                    ),
                },
            )
            if not spawned.is_error:
                self.spawned.append(str(json.loads(spawned.content)["name"]))

    def _answer(self, message: InboxMessage, tools: ToolBox) -> None:
        body = parse_body(message.text)
        if isinstance(body, PlanApprovalRequest):
            approved, feedback = review_plan(body.plan_content)
            answer = {
                "type": "plan_approval_response",
                "recipient": body.from_,
                "request_id": body.request_id,
            }
            tools.call("SendMessage", {**answer, "approve": approved, "content": feedback})
        elif isinstance(body, PermissionRequest):
            tools.call(
                "SendMessage",
                {
                    "type": "permission_response",
                    "recipient": body.agent_id,
                    "request_id": body.request_id,
                    "approve": True,
                },
            )
        elif body is None:
            match = REPORT.search(message.text)
            if match:
                lines = message.text.strip().splitlines()
                self.reports[match[1]] = lines[-1] if len(lines) > 1 else lines[0]

    # ------------------------------------------------------------ following the work

    def _follow_up(self, tools: ToolBox) -> TurnOutcome:
        if self.done or not self.task_ids:
            return TurnOutcome()
        ctx = tools.ctx
        mine = self._my_tasks(tools)
        unfinished = [t for t in mine if t["status"] in ("pending", "in_progress")]
        if unfinished and _can_go_on(mine):
            return TurnOutcome()  # work is under way: wait for the next report
        present = {m.name for m in ctx.messenger.store.read().teammates()}
        teammates = [name for name in self.spawned if name in present]  # others are not its to send away
        for name in teammates:
            if name not in self.asked:
                self.asked.add(name)
                tools.call(
                    "SendMessage",
                    {
                        "type": "shutdown_request",
                        "recipient": name,
                        "content": "The work is done; thank you.",
                    },
                )
        if teammates:
            return TurnOutcome()  # they leave one by one; each departure is a turn
        finished = all(t["status"] == "completed" for t in mine)  # a failed task is not done
        summary = self._summary(tools, "Done" if finished else "Stopped")
        self.done = True
        deleted = tools.call("TeamDelete", {})
        if deleted.is_error:
            # Refused as the README says it must be (not this lead's team, or a task left
            # open): the reason, not the tool's "Error: " shown as if the run had gone wrong.
            why = deleted.content.removeprefix("Error: ")
            return TurnOutcome(final_text=f"{summary}\nThe team stays: {why}")
        return TurnOutcome(final_text=summary)

    def _my_tasks(self, tools: ToolBox) -> list[dict[str, Any]]:
        listing = json.loads(tools.call("TaskList", {}).content)["tasks"]
        ours = set(self.task_ids.values())
        return [t for t in listing if t["id"] in ours]

    def _summary(self, tools: ToolBox, heading: str) -> str:
        tasks = self._my_tasks(tools)
        completed = sum(t["status"] == "completed" for t in tasks)
        lines = [f"{heading}: {completed} of {len(tasks)} tasks completed."]
        for task in tasks:
            line = f"#{task['id']} {task['subject']}: {task['status']}"
            if task["owner"]:
                line += f" ({task['owner']})"
            report = self.reports.get(str(task["id"]))
            if report:
                line += f" - {report}"
            lines.append(line)
        return "\n".join(lines)


def _cannot(answer: str) -> TurnOutcome:
    """An answer that is also a failed turn (its first sentence): the goal could not be taken
    on. A sentence ends at a period outside the quotes, not at a quoted step's '1. '."""
    end = next(
        (m.start() for m in re.finditer(r"\. ", answer) if answer.count("'", 0, m.start()) % 2 == 0),
        len(answer),
    )
    return TurnOutcome(final_text=answer, failure_reason=answer[:end])


def _can_go_on(tasks: list[dict[str, Any]]) -> bool:
    """Some task runs, or could be claimed (pending, unowned, every blocker completed): one
    TaskList listing decides, so a claim in between cannot make it look finished."""
    done = {t["id"] for t in tasks if t["status"] == "completed"}
    listed = {t["id"] for t in tasks}
    return any(
        t["status"] == "in_progress"
        or (
            t["status"] == "pending"
            and not t["owner"]
            and all(b in done or b not in listed for b in t["blockedBy"])
        )
        for t in tasks
    )
