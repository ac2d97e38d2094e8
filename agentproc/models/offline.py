"""The offline model: a deterministic policy that drives the tools like a diligent teammate.

It needs no key and no network, so every protocol path runs in tests and in the demo:
claimed and assigned tasks have their ``metadata.command`` run with Bash and are marked
completed (or the failure reported); results go to the lead; DMs are answered once;
shutdown requests are approved.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentproc import checkins
from agentproc.models.base import Turn, TurnOutcome
from agentproc.tools import ToolBox
from ipc.schemas import LEAD_NAME, ShutdownRequest, TaskAssignment

AUTO_REPLY = "[auto-reply]"
HOOK_FEEDBACK = "TeammateIdle hook feedback:"
MAX_PLAN_ATTEMPTS = 3
BACKGROUND_AGENT = "backgroundAgent"  # task metadata: the subagent doing it in the background


def _launched_id(output: str) -> str:
    """The agentId of an Agent call that returned ``async_launched``, or ''."""
    try:
        said = json.loads(output)
    except ValueError:
        return ""
    launched = isinstance(said, dict) and said.get("status") == "async_launched"
    return str(said.get("agentId") or "") if launched else ""


class OfflineModel:
    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        if tools.ctx.spec.role == "subagent":
            return self._subagent(turn, tools)
        if turn.kind == "notification":
            return self._pass_on(turn, tools)
        if isinstance(turn.body, ShutdownRequest):
            tools.call(
                "SendMessage",
                {"type": "shutdown_response", "request_id": turn.body.request_id, "approve": True},
            )
            return TurnOutcome()
        if turn.kind == "claim":
            return self._do_task(turn.task_id, tools)
        if isinstance(turn.body, TaskAssignment):
            return self._do_task(turn.body.task_id, tools)
        if turn.body is not None:
            return TurnOutcome()  # other protocol bodies need no answer from a teammate
        if turn.is_prompt:
            return TurnOutcome()  # instructions, not a DM: the work comes through the task list
        if turn.kind == "user" and turn.content.startswith(HOOK_FEEDBACK):
            tools.call("TaskList", {})  # told to keep working: look for work again
            return TurnOutcome()
        if turn.sender and turn.sender != tools.ctx.name and not turn.content.startswith(AUTO_REPLY):
            first_line = turn.content.strip().splitlines()[0][:120] if turn.content.strip() else ""
            tools.call(
                "SendMessage",
                {
                    "type": "message",
                    "recipient": turn.sender,
                    "content": f"{AUTO_REPLY} {tools.ctx.name} received your message: {first_line}",
                    "summary": "Acknowledged",
                },
            )
        return TurnOutcome()

    def _pass_on(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        """A background subagent ended: the task it was doing is completed with its answer
        (or fails with its error); one that did no task of ours, its answer goes to the lead."""
        summary = re.search(r"<summary>(.*?)</summary>", turn.text)
        answer = re.search(r"<result>(.*?)</result>", turn.text, re.S)
        said = answer.group(1).strip() if answer else ""
        agent = re.search(r"<task-id>(.*?)</task-id>", turn.text)
        status = re.search(r"<status>(.*?)</status>", turn.text)
        for task in tools.ctx.tasks.list():
            if not agent or task.meta.get(BACKGROUND_AGENT) != agent.group(1):
                continue
            if task.status == "pending" and task.owner_name is None:
                # Released when this agent restarted, its subagent's answer only now told: taken back.
                taken = {"taskId": task.id, "owner": tools.ctx.name, "status": "in_progress"}
                if tools.call("TaskUpdate", taken).is_error:
                    continue
            elif task.status != "in_progress":
                continue
            shown = {"id": task.id, "subject": task.subject, "metadata": task.meta}
            if status and status.group(1) == "completed":
                self._complete(tools, shown, said)
            else:
                self._give_back(
                    tools,
                    shown,
                    f"its subagent {status.group(1) if status else 'ended'}: {said}",
                    "failed",
                )
            return TurnOutcome()
        tools.call(
            "SendMessage",
            {
                "type": "message",
                "recipient": LEAD_NAME,
                "content": f"{summary.group(1) if summary else 'A background subagent ended'}:\n{said[-2000:] or '(no answer)'}",
                "summary": "Background subagent ended",
            },
        )
        return TurnOutcome()

    @staticmethod
    def check_in(check: checkins.CheckIn, tools: ToolBox) -> bool:
        """A check-in on a synchronous subagent it waits for: the rule of agentproc.checkins."""
        return checkins.offline_answer(tools.ctx.name, check)

    @staticmethod
    def _subagent(turn: Turn, tools: ToolBox) -> TurnOutcome:
        """A subagent's one job: run each `backticked` command of its prompt; its answer is
        their output. A command that fails fails the subagent."""
        commands = re.findall(r"`([^`\n]+)`", turn.content)
        if not commands:
            return TurnOutcome(final_text=f"Nothing to run in: {turn.content.strip()[:200]}")
        outputs = []
        for command in commands:
            result = tools.call("Bash", {"command": command, "description": "subagent step"})
            if result.is_error:
                return TurnOutcome(failure_reason=f"`{command}` failed: {result.content[-1000:]}")
            outputs.append(result.content.strip())
        return TurnOutcome(final_text="\n".join(outputs))

    @staticmethod
    def _give_back(tools: ToolBox, task: dict[str, Any], error: str, status: str) -> None:
        """Release the task, its failure recorded, and tell the lead: it is shown as failed
        and waits for a retry (``status: pending``), never left owned and in progress."""
        task_id = str(task["id"])
        error = error.removeprefix("Error: ")
        tools.call(
            "TaskUpdate",
            {"taskId": task_id, "status": "pending", "owner": "", "metadata": {"lastError": error[-2000:]}},
        )
        tools.call(
            "SendMessage",
            {
                "type": "message",
                "recipient": LEAD_NAME,
                "content": f"Task #{task_id} ({task['subject']}) failed:\n{error[-2000:]}",
                "summary": f"Task #{task_id} failed",
            },
        )
        tools.ctx.completed = (task_id, status)
        tools.ctx.current_task = ""

    def _do_task(self, task_id: str, tools: ToolBox) -> TurnOutcome:
        got = tools.call("TaskGet", {"taskId": task_id})
        if got.is_error:
            return TurnOutcome()
        task = json.loads(got.content)["task"]
        me = tools.ctx.name
        if task.get("owner") not in (None, "", me) or task.get("status") == "completed":
            return TurnOutcome()
        if task.get("status") != "in_progress":
            # Assigned (or claimed just now): started as any task is, which a blocker refuses;
            # its owner is told again when the last blocker completes.
            started = tools.call("TaskUpdate", {"taskId": task_id, "owner": me, "status": "in_progress"})
            if started.is_error:
                return TurnOutcome()
        tools.ctx.current_task = task_id
        metadata = task.get("metadata") or {}
        command = metadata.get("command")
        if tools.ctx.in_plan_mode and not self._plan_approved(task, command, tools):
            return TurnOutcome()
        output = ""
        if command:
            timeout = (task.get("metadata") or {}).get("timeout_ms")
            args = {"command": command, "description": task["subject"]}
            if isinstance(timeout, int):
                args["timeout"] = timeout
            result = tools.call("Bash", args)
            if result.is_error:
                self._give_back(tools, task, result.content, "failed")
                return TurnOutcome()
            output = result.content
        helper = metadata.get("subagent")
        if isinstance(helper, str) and helper.strip():
            # A subagent does the task's work (its prompt's `backticked` commands, on this
            # model): how subagents can be tried with no model API at hand.
            args = {
                "description": str(task["subject"])[:60],
                "prompt": helper,
                "subagent_type": "general-purpose",
            }
            result = tools.call("Agent", args)
            if result.is_error:
                self._give_back(tools, task, result.content, "failed")
                return TurnOutcome()
            output = result.content.split("\n\nagentId: ")[0]  # its answer, not the usage that follows
            launched = _launched_id(output)
            if launched:  # moved to the background at a check-in: the task is done when it ends
                tools.call("TaskUpdate", {"taskId": task_id, "metadata": {BACKGROUND_AGENT: launched}})
                tools.ctx.current_task = ""
                return TurnOutcome()
        self._complete(tools, task, output)
        return TurnOutcome()

    def _complete(self, tools: ToolBox, task: dict[str, Any], output: str) -> None:
        """The task completed with ``output``: its follow-ups made, the lead told."""
        task_id, metadata = str(task["id"]), task.get("metadata") or {}
        done = tools.call("TaskUpdate", {"taskId": task_id, "status": "completed"})
        if done.is_error:  # a TaskCompleted hook kept it open, or the update could not be written
            self._give_back(tools, task, f"not completed: {done.content}", "blocked")
            return
        for follow_up in metadata.get("followUps") or []:
            if isinstance(follow_up, dict) and follow_up.get("subject"):
                extra = {"metadata": {"command": follow_up["command"]}} if follow_up.get("command") else {}
                tools.call(
                    "TaskCreate",
                    {
                        "subject": follow_up["subject"],
                        "description": follow_up.get("description", ""),
                        **extra,
                    },
                )
        last = output.strip().splitlines()[-1][:200] if output.strip() else "done"
        tools.call(
            "SendMessage",
            {
                "type": "message",
                "recipient": LEAD_NAME,
                "content": f"Completed task #{task_id}: {task['subject']}\n{last}",
                "summary": f"Task #{task_id} done",
            },
        )

    def _plan_approved(self, task: dict[str, object], command: object, tools: ToolBox) -> bool:
        """Plan, submit, revise on rejection (a new request each time); True once approved."""
        steps = [f"Run `{command}` in the working directory" if command else f"Do: {task['subject']}"]
        for _ in range(MAX_PLAN_ATTEMPTS):
            plan = f"# Plan for task #{task['id']}: {task['subject']}\n\n" + "\n".join(
                f"{i}. {s}" for i, s in enumerate(steps, 1)
            )
            result = tools.call("ExitPlanMode", {"plan": plan})
            if not result.is_error and not result.content.startswith("Plan rejected"):
                return True
            feedback = result.content.split("Feedback:", 1)[-1].split("\n", 1)[0].strip()
            steps.append(f"Address the lead's feedback: {feedback}")
        tools.call(
            "SendMessage",
            {
                "type": "message",
                "recipient": LEAD_NAME,
                "content": f"My plan for task #{task['id']} was not approved after {MAX_PLAN_ATTEMPTS} attempts; I am leaving it.",
                "summary": f"Plan for #{task['id']} not approved",
            },
        )
        tools.call("TaskUpdate", {"taskId": str(task["id"]), "owner": "", "status": "pending"})
        return False
