"""Rewriting a JSON object without losing what we do not know (other writers keep their own state in fields of ours).

Other writers keep their own state in these files (Claude Code 2.1.330's ``leadProcess``,
claude-code-teams-mcp's ``opencodeSessionId``). A rewrite therefore starts from the object
as read, replaces only the fields our Struct knows, and keeps every other key in its place.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    kind = type(updated)
    attrs = dict(zip(kind.__struct_encode_fields__, kind.__struct_fields__, strict=True))
    out: dict[str, Any] = {}
    for key, value in original.items():
        if key not in attrs:
            out[key] = value
        elif key in new:
            inner = getattr(updated, attrs[key])
            # A nested object of ours (2.1.330's leadProcess) keeps its unknown keys too.
            nested = isinstance(inner, msgspec.Struct) and isinstance(value, dict)
            out[key] = merged(value, inner) if nested else new[key]
    for key, value in new.items():
        out.setdefault(key, value)
    return out


class Merges:
    """:func:`merged` for the objects of a list, each result remembered: rewriting a list of
    thousands (a team's members) in which one changed merges only that one again."""

    def __init__(self) -> None:
        self._last: dict[Any, tuple[dict[str, Any] | None, msgspec.Struct, dict[str, Any]]] = {}

    def merged(self, key: Any, original: dict[str, Any] | None, updated: msgspec.Struct) -> dict[str, Any]:
        last = self._last.get(key)
        if last is not None and last[1] == updated and last[0] == original:
            return last[2]
        out = merged(original, updated)
        self._last[key] = (original, updated, out)
        return out

    def all(self, items: Sequence[tuple[Any, dict[str, Any] | None, msgspec.Struct]]) -> list[dict[str, Any]]:
        """Each ``(key, original, updated)`` merged; every object not among them forgotten."""
        out = [self.merged(key, original, updated) for key, original, updated in items]
        if len(self._last) > len(items):
            keys = {key for key, _, _ in items}
            self._last = {k: v for k, v in self._last.items() if k in keys}
        return out
