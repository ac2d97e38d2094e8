"""The check a door makes of the entries in a reader's inbox: one :class:`trust.Verifier`
for every door (the command line, the Python API, MCP, the web API and page), so each shows
the same verdict for the same entry."""

from __future__ import annotations

from ipc import trust
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError
from ipc.schemas import LEAD_NAME
from supervisor.client.ps_claude import lead_verify_keys


def verifier(store: TeamConfigStore, reader: str) -> trust.Verifier:
    """``reader``'s check. A team whose lead is Claude Code's names no key for it in the
    config: its entries verify with the ``--lead-verify-key`` its live ``claude`` teammates
    were given, looked up (a scan of processes) only when a lead's entry is checked."""

    def lead_keys() -> list[str]:
        try:
            config = store.read()
        except AgentTeamsError:
            return []
        lead = config.member(LEAD_NAME)
        claude_led = config.writes_v2 and (lead is None or not isinstance(lead.verify_key, str))
        return lead_verify_keys(store.paths.team, str(store.paths.root)) if claude_led else []

    return trust.Verifier(store, reader, lead_keys=lead_keys)
