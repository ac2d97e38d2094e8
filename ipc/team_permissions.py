"""The lead changing a running teammate's permissions, built once for every door (the
table's ``set_mode`` and ``update_permissions``, and a lead agent's SendMessage): Claude
Code's ``mode_set_request`` and ``team_permission_update``, written to the teammate's
inbox. The teammate takes either before its next turn, keeps it for the rest of its
session and tells the lead it did; a mode is also kept in its member entry, for restarts."""

from __future__ import annotations

from typing import Any

from ipc import permission_updates
from ipc.clock import now_iso
from ipc.errors import InvalidInput
from ipc.messaging import Messenger, clean_recipient
from ipc.options import PERMISSION_MODES, check_permission_mode
from ipc.paths import normalise_agent_name
from ipc.permission_updates import PermissionUpdate
from ipc.schemas import LEAD_NAME, ModeSetRequest, TeamPermissionUpdate

EVERYONE = ("*", "@team")


def set_mode(messenger: Messenger, name: str, mode: str) -> str:
    """Send ``name`` a mode_set_request and keep the mode in its member entry; the
    teammate's name. InvalidInput (nothing sent) for a mode that is not one."""
    if not check_permission_mode(mode):
        raise InvalidInput(f"give a permission mode: one of {', '.join(PERMISSION_MODES)}")
    member = normalise_agent_name(clean_recipient(name))
    if member == LEAD_NAME:
        raise InvalidInput("the lead's own mode is set when it starts (--permission-mode); name a teammate")
    messenger.store.require_member(member)
    messenger.store.update_member(member, permission_mode=mode)
    messenger.send_body(
        LEAD_NAME, member, ModeSetRequest(mode=mode, from_=LEAD_NAME, timestamp=now_iso(), target=member)
    )
    return member


def updates(
    rules: list[str], behavior: str, directories: list[str], given: list[Any] | None = None
) -> list[PermissionUpdate]:
    """Claude Code's permission updates, for the session, of rules (``Bash(npm test:*)``)
    and directories, then ``given`` (updates as JSON objects, each checked); InvalidInput
    naming the first one that is wrong."""
    out = permission_updates.add_rules(rules, behavior, directories)
    out += permission_updates.parse_all(given or [])
    if not out:
        raise InvalidInput(
            "give at least one permission rule (e.g. 'Bash(npm test:*)'), directory or permission update"
        )
    return out


def update_permissions(messenger: Messenger, name: str, changes: list[PermissionUpdate]) -> list[str]:
    """Send each change to ``name`` (every teammate for ``*``) as a team_permission_update;
    the teammates it went to."""
    config = messenger.store.read()
    lead = config.member(LEAD_NAME)
    cwd = lead.cwd if lead is not None else ""
    if not name.strip():  # an unset variable in a script must not reach every teammate
        raise InvalidInput("no teammate named: give a teammate's name, or '*' for every teammate")
    if name.strip() in EVERYONE:
        names = [m.name for m in config.teammates()]
        if not names:
            raise InvalidInput(
                f"team {config.name!r} has no teammates to give permissions to; spawn one first"
            )
    else:
        member = normalise_agent_name(clean_recipient(name))
        if member == LEAD_NAME:
            raise InvalidInput("the lead's permissions come from its settings files; name a teammate or '*'")
        names = [messenger.store.require_member(member).name]
    for change in changes:
        rules = getattr(change, "rules", None)
        for member in names:
            body = TeamPermissionUpdate(
                permission_update=permission_updates.as_object(change),
                directory_path=cwd,
                tool_name=rules[0].tool_name if rules else "",
                from_=LEAD_NAME,
                timestamp=now_iso(),
                target=member,
            )
            messenger.deliver_body(LEAD_NAME, member, body)
    return names
