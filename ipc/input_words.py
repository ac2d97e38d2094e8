"""An operation's input checked against its Struct, and msgspec's complaint put in our words.

Every door converts what it was given with :func:`convert` (MCP arguments, an HTTP body or
query string) or holds a Struct it built itself to the same rules with :func:`checked`
(the command line, the Python ``Team``). A refusal is one line naming the operation, the
field, the value given and what would be right: ``task_get: id '../x' is not a task
number, e.g. '7'``, not ``Expected `str` matching regex …``.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from ipc.errors import InvalidInput

S = TypeVar("S", bound=msgspec.Struct)

_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_KINDS = {
    "str": "text",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "object": "a JSON object",
    "array": "a list",
    "null": "null",
}
_TYPES = re.compile(r"`([a-z| ]+)`")
_MISSING = object()


def convert(op: str, data: Any, kind: type[S], *, strict: bool = True) -> S:
    """``data`` as ``kind``; InvalidInput in words when it does not fit."""
    try:
        return msgspec.convert(data, kind, strict=strict)
    except msgspec.ValidationError as exc:
        raise refusal(op, kind, data, exc) from None


def checked(op: str, kind: type[S], args: S) -> S:
    """``args`` held to every constraint of ``kind`` (a range, a pattern, a type). msgspec
    checks them only when it converts: a door that builds the Struct itself would otherwise
    hand on a grace of -1 or NaN unchecked."""
    try:
        data = msgspec.to_builtins(args)
        msgspec.json.encode(data)  # a lone surrogate (argv bytes not UTF-8) cannot be written either
    except TypeError as exc:  # a value of no JSON type (from Python): it could not be written either
        raise InvalidInput(f"{op}: {exc}") from None
    except UnicodeEncodeError:
        raise _not_unicode(op, data) from None
    return convert(op, data, kind)


def _not_unicode(op: str, data: dict[str, Any]) -> InvalidInput:
    for field, value in data.items():
        try:
            msgspec.json.encode(value)
        except UnicodeEncodeError:
            return InvalidInput(f"{op}: {field} {_short(value)} is not UTF-8 text; give it in UTF-8")
    return InvalidInput(f"{op}: a text given is not UTF-8; give it in UTF-8")


def refusal(op: str, kind: type[msgspec.Struct], data: Any, exc: msgspec.ValidationError) -> InvalidInput:
    found = _AT.match(str(exc))
    what, path = (found["what"], found["path"] or "") if found else (str(exc), "")
    if not path:  # a missing or unknown field, or not an object at all: msgspec names it well
        return InvalidInput(f"{op}: {what}")
    field = path.lstrip(".")
    value = _value_at(data, path)
    given = f"{field} is {_short(value)}" if value is not _MISSING else field
    hint = _hint(_schema_at(kind, path))
    if hint and value is not _MISSING and ("matching regex" in what or what.startswith("Invalid enum value")):
        return InvalidInput(f"{op}: {field} {_short(value)} is not {hint}")
    what = _TYPES.sub(lambda m: " or ".join(_KINDS.get(t, t) for t in m[1].split(" | ")), what)
    what = what[0].lower() + what[1:]
    return InvalidInput(f"{op}: {given}: {what}" + (f" ({hint})" if hint else ""))


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:50] + f"… ({len(shown)} characters)"


def _steps(path: str) -> list[str | int]:
    return [name if name else int(index) for name, index in _STEP.findall(path)]


def _value_at(data: Any, path: str) -> Any:
    for step in _steps(path):
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return data


def _schema_at(kind: type[msgspec.Struct], path: str) -> dict[str, Any]:
    """The JSON Schema of the field at ``path`` (through lists and optional values)."""
    schema: dict[str, Any] = msgspec.json.schema(kind)
    defs = schema.get("$defs", {})

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref", "")
        return resolve(defs.get(ref.rsplit("/", 1)[-1], {})) if ref else node

    node = resolve(schema)
    for step in _steps(path):
        options = [resolve(n) for n in node.get("anyOf", [node])]
        key = "items" if isinstance(step, int) else "properties"
        nexts = [o[key] if key == "items" else o.get(key, {}).get(step) for o in options if key in o]
        nexts = [n for n in nexts if n]
        if not nexts:
            return {}
        node = resolve(nexts[0])
    return node


def _hint(node: dict[str, Any]) -> str:
    """What a field wants, as its description or its allowed values say."""
    options = [node, *node.get("anyOf", [])]
    for option in options:
        if "enum" in option:
            return "one of " + ", ".join(repr(v) for v in option["enum"])
    return next((str(o["description"]) for o in options if o.get("description")), "")
