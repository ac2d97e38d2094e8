"""File tools with Claude Code's input names: Read, Write, Edit, Glob, Grep."""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, require
from agentproc.tools.bash import cap

MAX_READ_LINES = 2000


def _read(ctx: AgentContext, args: dict[str, Any]) -> str:
    path = ctx.resolve(require(args, "file_path"))
    offset = args.get("offset", 1)
    limit = args.get("limit", MAX_READ_LINES)
    if not isinstance(offset, int) or not isinstance(limit, int) or offset < 1 or limit < 1:
        raise ToolFailure("'offset' and 'limit' are positive line numbers/counts")
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        raise ToolFailure(f"{path} does not exist") from None
    except IsADirectoryError:
        raise ToolFailure(f"{path} is a directory; use Glob to list it") from None
    chosen = lines[offset - 1 : offset - 1 + limit]
    return cap("\n".join(f"{n:>6}\t{line}" for n, line in enumerate(chosen, start=offset)))


def _write(ctx: AgentContext, args: dict[str, Any]) -> str:
    path = ctx.resolve(require(args, "file_path"))
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolFailure("'content' must be a string")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.agentteams-tmp")
    tmp.write_text(content)
    os.replace(tmp, path)  # never a half-written file, even if we are killed
    return f"Wrote {len(content)} characters to {path}"


def _edit(ctx: AgentContext, args: dict[str, Any]) -> str:
    path = ctx.resolve(require(args, "file_path"))
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not old or not isinstance(new, str):
        raise ToolFailure("'old_string' (non-empty) and 'new_string' are required strings")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ToolFailure(f"{path} does not exist") from None
    count = text.count(old)
    if count == 0:
        raise ToolFailure(f"old_string was not found in {path}")
    if count > 1 and not args.get("replace_all"):
        raise ToolFailure(f"old_string occurs {count} times in {path}; give more context or set replace_all")
    updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
    tmp = path.with_name(f".{path.name}.agentteams-tmp")
    tmp.write_text(updated)
    os.replace(tmp, path)
    return f"Replaced {count if args.get('replace_all') else 1} occurrence(s) in {path}"


def _glob(ctx: AgentContext, args: dict[str, Any]) -> str:
    pattern = require(args, "pattern")
    base = ctx.resolve(args.get("path") or ".")
    matches = sorted(str(p) for p in base.glob(pattern))
    return "\n".join(matches[:1000]) or "No files found"


def _grep(ctx: AgentContext, args: dict[str, Any]) -> str:
    try:
        regex = re.compile(require(args, "pattern"))
    except re.error as exc:
        raise ToolFailure(f"invalid regular expression: {exc}") from None
    base = ctx.resolve(args.get("path") or ".")
    file_glob = args.get("glob")
    mode = args.get("output_mode", "files_with_matches")
    if mode not in ("files_with_matches", "content", "count"):
        raise ToolFailure("'output_mode' is one of files_with_matches, content, count")
    files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
    out: list[str] = []
    for path in files:
        if file_glob and not fnmatch.fnmatch(path.name, file_glob):
            continue
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        hits = [(n, line) for n, line in enumerate(lines, 1) if regex.search(line)]
        if not hits:
            continue
        if mode == "files_with_matches":
            out.append(str(path))
        elif mode == "count":
            out.append(f"{path}:{len(hits)}")
        else:
            out.extend(f"{path}:{n}:{line}" for n, line in hits)
    return cap("\n".join(out)) or "No matches found"


def _path_schema(extra: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": extra, "required": required}


def _file_path(ctx: AgentContext, args: dict[str, Any]) -> list[str]:
    return [str(args.get("file_path", ""))]


def _search_path(ctx: AgentContext, args: dict[str, Any]) -> list[str]:
    return [str(args.get("path") or ".")]


READ = Tool(
    "Read",
    "Read a file (line-numbered).",
    _path_schema(
        {"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
        ["file_path"],
    ),
    _read,
    kind="read",
    paths=_file_path,
)
WRITE = Tool(
    "Write",
    "Write a file, replacing it.",
    _path_schema({"file_path": {"type": "string"}, "content": {"type": "string"}}, ["file_path", "content"]),
    _write,
    kind="write",
    paths=_file_path,
)
EDIT = Tool(
    "Edit",
    "Replace text in a file.",
    _path_schema(
        {
            "file_path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        ["file_path", "old_string", "new_string"],
    ),
    _edit,
    kind="write",
    paths=_file_path,
)
GLOB = Tool(
    "Glob",
    "Find files by glob pattern.",
    _path_schema({"pattern": {"type": "string"}, "path": {"type": "string"}}, ["pattern"]),
    _glob,
    kind="read",
    paths=_search_path,
)
GREP = Tool(
    "Grep",
    "Search file contents with a regular expression.",
    _path_schema(
        {
            "pattern": {"type": "string"},
            "path": {"type": "string"},
            "glob": {"type": "string"},
            "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
        },
        ["pattern"],
    ),
    _grep,
    kind="read",
    paths=_search_path,
)
