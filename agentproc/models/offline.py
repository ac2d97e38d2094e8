"""The offline model: a deterministic policy that drives the tools like a diligent teammate.

It needs no key and no network, so every protocol path runs in tests and in the demo:
claimed and assigned tasks have their ``metadata.command`` run with Bash and are marked
completed (or the failure reported); results go to the lead; DMs are answered once;
shutdown requests are approved.
"""

from __future__ import annotations

import json

from agentproc.models.base import Turn, TurnOutcome
from agentproc.tools import ToolBox
from ipc.schemas import LEAD_NAME, ShutdownRequest, TaskAssignment

AUTO_REPLY = "[auto-reply]"


class OfflineModel:
    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        if isinstance(turn.body, ShutdownRequest):
            tools.call("SendMessage", {"type": "shutdown_response", "request_id": turn.body.request_id, "approve": True})
            return TurnOutcome()
        if turn.kind == "claim":
            return self._do_task(turn.task_id, tools)
        if isinstance(turn.body, TaskAssignment):
            return self._do_task(turn.body.task_id, tools)
        if turn.body is not None:
            return TurnOutcome()  # other protocol bodies need no answer from a teammate
        if turn.is_prompt:
            return TurnOutcome()  # instructions, not a DM: the work comes through the task list
        if turn.sender and turn.sender != tools.ctx.name and not turn.content.startswith(AUTO_REPLY):
            first_line = turn.content.strip().splitlines()[0][:120] if turn.content.strip() else ""
            tools.call("SendMessage", {
                "type": "message",
                "recipient": turn.sender,
                "content": f"{AUTO_REPLY} {tools.ctx.name} received your message: {first_line}",
                "summary": "Acknowledged",
            })
        return TurnOutcome()

    def _do_task(self, task_id: str, tools: ToolBox) -> TurnOutcome:
        got = tools.call("TaskGet", {"taskId": task_id})
        if got.is_error:
            return TurnOutcome()
        task = json.loads(got.content)["task"]
        me = tools.ctx.name
        if task.get("owner") not in (None, "", me) or task.get("status") == "completed":
            return TurnOutcome()
        if not task.get("owner"):
            tools.call("TaskUpdate", {"taskId": task_id, "owner": me, "status": "in_progress"})
        tools.ctx.current_task = task_id
        command = (task.get("metadata") or {}).get("command")
        output = ""
        if command:
            timeout = (task.get("metadata") or {}).get("timeout_ms")
            args = {"command": command, "description": task["subject"]}
            if isinstance(timeout, int):
                args["timeout"] = timeout
            result = tools.call("Bash", args)
            if result.is_error:
                tools.call("TaskUpdate", {"taskId": task_id, "metadata": {"lastError": result.content[-2000:]}})
                tools.call("SendMessage", {
                    "type": "message",
                    "recipient": LEAD_NAME,
                    "content": f"Task #{task_id} ({task['subject']}) failed:\n{result.content[-2000:]}",
                    "summary": f"Task #{task_id} failed",
                })
                tools.ctx.completed = (task_id, "failed")
                return TurnOutcome()
            output = result.content
        done = tools.call("TaskUpdate", {"taskId": task_id, "status": "completed"})
        if done.is_error:
            return TurnOutcome()
        last = output.strip().splitlines()[-1][:200] if output.strip() else "done"
        tools.call("SendMessage", {
            "type": "message",
            "recipient": LEAD_NAME,
            "content": f"Completed task #{task_id}: {task['subject']}\n{last}",
            "summary": f"Task #{task_id} done",
        })
        return TurnOutcome()
