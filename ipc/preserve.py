"""Rewriting a JSON object without losing what we do not know (other writers keep their own state in fields of ours).

Other writers keep their own state in these files (Claude Code 2.1.330's ``leadProcess``,
claude-code-teams-mcp's ``opencodeSessionId``). A rewrite therefore starts from the object
as read, replaces only the fields our Struct knows, and keeps every other key in its place.
"""

from __future__ import annotations

from typing import Any

import msgspec

_any_object = msgspec.json.Decoder(dict[str, Any])


def read_object(data: bytes) -> dict[str, Any] | None:
    """The file's top-level object, or None if it is not one."""
    try:
        return _any_object.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def merged(original: dict[str, Any] | None, updated: msgspec.Struct) -> dict[str, Any]:
    """``updated`` as a JSON object that keeps ``original``'s unknown keys in their places.
    A known field that ``updated`` leaves unset is removed, as a rewrite would."""
    new: dict[str, Any] = msgspec.to_builtins(updated)
    if not original:
        return new
    known = set(type(updated).__struct_encode_fields__)
    out: dict[str, Any] = {}
    for key, value in original.items():
        if key not in known:
            out[key] = value
        elif key in new:
            out[key] = new[key]
    for key, value in new.items():
        out.setdefault(key, value)
    return out
