"""File tools with Claude Code's input names: Read, Write, Edit, Glob, Grep."""

from __future__ import annotations

import fnmatch
import os
import re

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure
from agentproc.tools.bash import cap
from ipc.tool_inputs import EditInput, GlobInput, GrepInput, ReadInput, WriteInput


def _read(ctx: AgentContext, args: ReadInput) -> str:
    path = ctx.resolve(args.file_path)
    offset, limit = args.offset, args.limit
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        raise ToolFailure(f"{path} does not exist") from None
    except IsADirectoryError:
        raise ToolFailure(f"{path} is a directory; use Glob to list it") from None
    chosen = lines[offset - 1 : offset - 1 + limit]
    return cap("\n".join(f"{n:>6}\t{line}" for n, line in enumerate(chosen, start=offset)))


def _write(ctx: AgentContext, args: WriteInput) -> str:
    path = ctx.resolve(args.file_path)
    content = args.content
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.agentteams-tmp")
    tmp.write_text(content)
    os.replace(tmp, path)  # never a half-written file, even if we are killed
    return f"Wrote {len(content)} characters to {path}"


def _edit(ctx: AgentContext, args: EditInput) -> str:
    path = ctx.resolve(args.file_path)
    old, new = args.old_string, args.new_string
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ToolFailure(f"{path} does not exist") from None
    count = text.count(old)
    if count == 0:
        raise ToolFailure(f"old_string was not found in {path}")
    if count > 1 and not args.replace_all:
        raise ToolFailure(f"old_string occurs {count} times in {path}; give more context or set replace_all")
    updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    tmp = path.with_name(f".{path.name}.agentteams-tmp")
    tmp.write_text(updated)
    os.replace(tmp, path)
    return f"Replaced {count if args.replace_all else 1} occurrence(s) in {path}"


def _glob(ctx: AgentContext, args: GlobInput) -> str:
    base = ctx.resolve(args.path or ".")
    matches = sorted(str(p) for p in base.glob(args.pattern))
    return "\n".join(matches[:1000]) or "No files found"


def _grep(ctx: AgentContext, args: GrepInput) -> str:
    try:
        regex = re.compile(args.pattern)
    except re.error as exc:
        raise ToolFailure(f"invalid regular expression: {exc}") from None
    base = ctx.resolve(args.path or ".")
    file_glob, mode = args.glob, args.output_mode
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


def _file_path(ctx: AgentContext, args: ReadInput | WriteInput | EditInput) -> list[str]:
    return [args.file_path]


def _search_path(ctx: AgentContext, args: GlobInput | GrepInput) -> list[str]:
    return [args.path or "."]


READ = Tool("Read", ReadInput, _read, kind="read", paths=_file_path)
WRITE = Tool("Write", WriteInput, _write, kind="write", paths=_file_path)
EDIT = Tool("Edit", EditInput, _edit, kind="write", paths=_file_path)
GLOB = Tool("Glob", GlobInput, _glob, kind="read", paths=_search_path)
GREP = Tool("Grep", GrepInput, _grep, kind="read", paths=_search_path)
