"""A teammate's own git worktree (``--isolation worktree``, the Agent tool's ``isolation:
"worktree"``): a checkout of the team's repository on branch ``agentteams/{team}/{name}``,
at ``{root}/worktrees/{team}/{name}``, that becomes the teammate's cwd.

Two teammates editing the same file each edit their own copy; nothing conflicts until a
person merges the branches. When the teammate leaves the team its worktree is removed if
nothing changed in it (and its branch with it); one with changes, committed or not, is kept
for ``agentteams diff``. A record beside each worktree (``{name}.json``) says where it came
from, so it is found after its member has left and while the team is down.

Every call runs ``git`` with the caller's identity and a clean ``GIT_*`` environment (a
supervisor started from a git hook must not act on the hook's repository).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec

from ipc.errors import AgentTeamsError, InvalidInput, NotFound
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.storage import atomic_write, ensure_dir

GIT_TIMEOUT = 60.0
_GIT_ENV_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


class Worktree(msgspec.Struct, kw_only=True):
    """One teammate's worktree, as recorded when it was made."""

    name: str
    path: str  # the worktree's top directory
    cwd: str  # the teammate's cwd: the same place in the worktree as the team's cwd in the repository
    branch: str
    repository: str  # the top directory of the checkout it was made from
    base: str  # the commit it started from


class WorktreeDiff(msgspec.Struct, kw_only=True):
    """What a teammate changed in its worktree, against the commit it started from."""

    name: str
    path: str
    branch: str
    base: str
    changed: list[str]  # files, as git status names them (untracked ones too)
    commits: int  # commits on its branch since it started
    diff: str  # a unified diff; new files in full


def branch_for(team: str, name: str) -> str:
    return f"agentteams/{team}/{normalise_agent_name(name)}"


def _git(cwd: str | Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROPPED}
    try:
        result = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT,
        )
    except FileNotFoundError:
        raise InvalidInput("--isolation worktree needs git, and git is not installed") from None
    except subprocess.TimeoutExpired:
        raise AgentTeamsError(f"git {args[0]} in {cwd} did not finish within {GIT_TIMEOUT:g}s") from None
    if check and result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise AgentTeamsError(f"git {args[0]} in {cwd} failed: {last}")
    return result


def check_repository(cwd: str) -> str:
    """The top directory of the git checkout ``cwd`` is in; InvalidInput, naming what to do,
    when it is in none or the repository has no commit to branch from."""
    top = _git(cwd, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise InvalidInput(
            f"--isolation worktree needs the team's working directory in a git repository, and {cwd} "
            "is not in one: 'git init' and commit there, give --cwd a checkout, or spawn without --isolation"
        )
    if _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise InvalidInput(
            f"--isolation worktree branches from the current commit, and the repository at {cwd} "
            "has none yet: commit once first"
        )
    return top.stdout.strip()


# What tools make and make again, under ignored paths: not a teammate's work to keep.
CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules", ".venv"})


def record_path(paths: TeamPaths, name: str) -> Path:
    return paths.worktrees / f"{normalise_agent_name(name)}.json"


def find(paths: TeamPaths, name: str) -> Worktree | None:
    try:
        return msgspec.json.decode(record_path(paths, name).read_bytes(), type=Worktree)
    except (FileNotFoundError, msgspec.DecodeError):
        return None


def create(paths: TeamPaths, name: str, cwd: str) -> Worktree:
    """A worktree for ``name`` of the repository ``cwd`` is in, on a new branch from its
    current commit; an earlier one of the same name that was kept (it had changes) is taken
    up again, so its work goes on where it stopped."""
    earlier = find(paths, name)
    if earlier is not None and (Path(earlier.path) / ".git").exists():
        return earlier
    top = check_repository(cwd)
    base = _git(top, "rev-parse", "HEAD").stdout.strip()
    path = paths.worktrees / normalise_agent_name(name)
    branch = branch_for(paths.team, name)
    ensure_dir(paths.worktrees)
    _git(top, "worktree", "prune")  # a directory removed by hand must not block its path
    left = (
        _git(path, "rev-parse", "HEAD", "--abbrev-ref", "HEAD", check=False)
        if (path / ".git").exists()
        else None
    )
    if left is not None and left.returncode == 0 and left.stdout.split() == [base, branch]:
        # Made, and its record not yet written, when a kill came: on its branch at the
        # repository's commit, nothing done in it. Taken up, not refused for good as a path
        # that exists. (One that moved on is refused, as before: its base is not known.)
        pass
    elif _git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
        _git(top, "worktree", "add", str(path), branch)
    else:
        _git(top, "worktree", "add", "-b", branch, str(path), base)
    inside = Path(os.path.realpath(cwd)).relative_to(os.path.realpath(top))
    tree = Worktree(
        name=normalise_agent_name(name),
        path=str(path),
        cwd=str(path / inside),
        branch=branch,
        repository=top,
        base=base,
    )
    atomic_write(record_path(paths, name), msgspec.json.encode(tree))
    return tree


def changes(tree: Worktree) -> tuple[list[str], int]:
    """(files changed or added, commits made) in the worktree since it started. Files git
    ignores count too, a folder of them as one entry: a teammate's output under an ignored
    path (results, a ``.env``) is its work, and removing the worktree would delete it; a
    tool's cache (``__pycache__``, ``node_modules``…) is not, and does not count."""
    status = _git(tree.path, "status", "--porcelain", "--untracked-files=all").stdout
    ignored = _git(tree.path, "status", "--porcelain", "--ignored", "--untracked-files=normal").stdout
    files = [line[3:] for line in status.splitlines() if line.strip()]
    files += [
        line[3:]
        for line in ignored.splitlines()
        if line.startswith("!! ") and Path(line[3:].rstrip("/")).name not in CACHES
    ]
    commits = _git(tree.path, "rev-list", "--count", f"{tree.base}..HEAD").stdout.strip()
    return files, int(commits or 0)


def finish(paths: TeamPaths, name: str) -> Worktree | None:
    """The teammate left: its worktree goes if nothing changed in it (with its branch), and
    is kept otherwise. Returns the kept one, or None."""
    tree = find(paths, name)
    if tree is None:
        return None
    if not Path(tree.path).exists():
        _forget(paths, tree)
        return None
    files, commits = changes(tree)
    if files or commits:
        return tree
    _git(tree.repository, "worktree", "remove", "--force", tree.path, check=False)
    _git(tree.repository, "worktree", "prune", check=False)
    _git(tree.repository, "branch", "-D", tree.branch, check=False)
    _forget(paths, tree)
    return None


def _forget(paths: TeamPaths, tree: Worktree) -> None:
    record_path(paths, tree.name).unlink(missing_ok=True)


def all_of(paths: TeamPaths) -> list[Worktree]:
    found = (find(paths, p.stem) for p in sorted(paths.worktrees.glob("*.json")))
    return [tree for tree in found if tree is not None]


def diff(paths: TeamPaths, name: str) -> WorktreeDiff:
    """What ``name`` changed in its worktree; NotFound if it has none (never had one, or it
    was removed because nothing changed)."""
    tree = find(paths, name)
    if tree is None or not Path(tree.path).exists():
        raise NotFound(
            f"{name!r} has no worktree in team {paths.team!r}: it was not spawned with --isolation worktree, "
            "or it left with nothing changed and its worktree was removed"
        )
    files, commits = changes(tree)
    text = _git(tree.path, "diff", tree.base).stdout
    untracked = _git(tree.path, "ls-files", "--others", "--exclude-standard", "-z").stdout
    for new in (f for f in untracked.split("\0") if f):
        text += _git(tree.path, "diff", "--no-index", "--", "/dev/null", new, check=False).stdout
    return WorktreeDiff(
        name=tree.name,
        path=tree.path,
        branch=tree.branch,
        base=tree.base,
        changed=files,
        commits=commits,
        diff=text,
    )
