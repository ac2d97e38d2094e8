"""Models the benchmarks give their teammates (``--model python:benchmarks.models:Ping``):
the offline policy, plus the exchanges the benchmarks measure, so that the runtime itself
carries no benchmark protocol."""

from __future__ import annotations

import re

from agentproc.models import ModelContext, Turn, TurnOutcome
from agentproc.models.offline import OfflineModel
from agentproc.tools import ToolBox
from ipc.schemas import LEAD_NAME

PING = re.compile(r"^\[ping (\d+)\]")  # a volley between two teammates: answer with N-1
BURST = re.compile(r"^\[burst (\d+)\]")  # from the lead: send it that many messages


class Ping(OfflineModel):
    def __init__(self, context: ModelContext) -> None:
        super().__init__()

    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        ping = PING.match(turn.content)
        if ping and turn.sender:
            left = int(ping.group(1))
            recipient, text = (turn.sender, f"[ping {left - 1}]") if left > 0 else (LEAD_NAME, "[ping done]")
            tools.call(
                "SendMessage", {"type": "message", "recipient": recipient, "content": text, "summary": "ping"}
            )
            return TurnOutcome()
        burst = BURST.match(turn.content)
        if burst and turn.sender == LEAD_NAME:
            for i in range(int(burst.group(1))):
                tools.call(
                    "SendMessage",
                    {
                        "type": "message",
                        "recipient": LEAD_NAME,
                        "content": f"[burst-item {i}] from {tools.ctx.name}",
                        "summary": "burst",
                    },
                )
            return TurnOutcome()
        return super().run_turn(turn, tools)


PING_MODEL = "python:benchmarks.models:Ping"
