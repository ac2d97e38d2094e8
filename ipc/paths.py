"""Where everything lives, and the names that may appear in a path.

No input can produce a path outside its directory: every name that reaches a path goes
through :func:`team_dirname` or :func:`agent_filename`, which leave only ``[a-zA-Z0-9_-]``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from ipc.clock import now_ms
from ipc.errors import InvalidInput, UnsafeRuntimeDir

MAX_NAME_LENGTH = 64
# sun_path holds 107 bytes; leave room for "/w-{12 hex}.sock" and "ipc://" is not counted.
MAX_RUNTIME_PATH = 80
ROOT_FILE = "root"  # in a runtime directory: the state root and team it belongs to
DIR_MODE = 0o700
FILE_MODE = 0o600
TASK_ID = re.compile(r"[0-9]{1,12}")  # ASCII digits: str.isdigit() takes '١' for one


def child_path(directory: Path, name: str) -> Path:
    """``directory / name`` for a name made once per task. pathlib (3.11 to 3.13 at least)
    interns every part it parses, and the interpreter's table of interned strings, churned by
    a name per task, rebuilt itself at twice its size in the supervisor (0.5 MiB more held,
    found in the soak). The child pathlib makes for its own listings (3.11, 3.12) is not
    interned; where it has none (3.13), ``/``."""
    make_child = getattr(directory, "_make_child_relpath", None)
    return make_child(name) if make_child is not None else directory / name


def resolve_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The state root: an explicit ``--root``, else ``$AGENTTEAMS_HOME``, else ``~/.agentteams``."""
    if root is not None and str(root) != "":
        return Path(root).expanduser().absolute()
    env = os.environ.get("AGENTTEAMS_HOME")
    if env:
        return Path(env).expanduser().absolute()
    return Path.home() / ".agentteams"


def _check_name(kind: str, raw: str, normalised: str) -> str:
    if not raw or not raw.strip():
        raise InvalidInput(f"{kind} name is empty; give a name of letters, digits, '-' or '_'")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in raw):
        # Not made '-' like other characters: a NUL or a newline in a name is a mistake (an
        # unquoted variable, a pasted line), and 'a\x00b' must not find the member 'a-b'.
        raise InvalidInput(f"{kind} name {raw!r} has a control character; use letters, digits, '-' or '_'")
    if len(normalised) > MAX_NAME_LENGTH:
        raise InvalidInput(f"{kind} name is {len(raw)} characters long; use at most {MAX_NAME_LENGTH}")
    if not re.search(r"[a-zA-Z0-9]", normalised):
        raise InvalidInput(f"{kind} name {raw!r} has no letter or digit; use letters, digits, '-' or '_'")
    if normalised.startswith("-"):
        # A leading '-' would be read as an option by every command line that names it.
        raise InvalidInput(
            f"{kind} name {raw!r} would become {normalised!r}, which starts with '-'; "
            "start the name with a letter or digit"
        )
    return normalised


def task_number(task_id: str) -> str:
    """A task id as its file is named: the number, without leading zeros ('01' is task #1;
    ids come from a counter, and neither Claude Code nor we write one with a zero in front).
    Anything but one to twelve ASCII digits comes back as given, for the caller to refuse."""
    return str(int(task_id)) if isinstance(task_id, str) and TASK_ID.fullmatch(task_id) else task_id


def task_numbers(ids: list[str] | None) -> list[str] | None:
    """:func:`task_number` of each id of a list (None: none given)."""
    return None if ids is None else [task_number(t) for t in ids]


def _kept(rule: Callable[[str], str]) -> Callable[[str], str]:
    """``rule`` with its answers kept (it is on every send's path; a refused name is not),
    its signature still the one the type checker sees."""
    return functools.lru_cache(maxsize=4096)(rule)


@_kept
def normalise_team_name(name: str) -> str:
    """Claude Code's rule: every character but [a-zA-Z0-9] becomes '-', then lower case."""
    return _check_name("team", name, re.sub(r"[^a-zA-Z0-9]", "-", name).lower())


@_kept
def normalise_agent_name(name: str) -> str:
    """Claude Code's rule for names in paths: every character but [a-zA-Z0-9_-] becomes '-'."""
    return _check_name("agent", name, re.sub(r"[^a-zA-Z0-9_-]", "-", name))


def agent_id(name: str, team: str) -> str:
    return f"{name}@{team}"


def color_for(index: int) -> str:
    from ipc.schemas import COLORS

    return COLORS[index % len(COLORS)]


def shutdown_request_id(agent: str, ms: int | None = None) -> str:
    return f"shutdown-{now_ms() if ms is None else ms}@{agent}"


def plan_request_id(agent: str, team: str, ms: int | None = None) -> str:
    return f"plan_approval-{now_ms() if ms is None else ms}@{agent}@{team}"


def permission_request_id(ms: int | None = None) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    suffix = "".join(secrets.choice(alphabet) for _ in range(7))
    return f"perm-{now_ms() if ms is None else ms}-{suffix}"


def request_epoch_ms(request_id: str) -> int | None:
    """The epoch ms embedded in a shutdown/plan/permission request id, or None."""
    match = re.match(r"^(?:shutdown|plan_approval|perm)-(\d+)", request_id)
    return int(match.group(1)) if match else None


class TeamPaths:
    """Every state path of one team under one root. Names are normalised on the way in."""

    def __init__(self, root: str | os.PathLike[str] | None, team: str) -> None:
        self.root = resolve_root(root)
        self.team = normalise_team_name(team)
        self._runtime: Path | None = None

    @property
    def team_dir(self) -> Path:
        return self.root / "teams" / self.team

    @property
    def config(self) -> Path:
        return self.team_dir / "config.json"

    def missing(self) -> str:
        """The one line for a team that does not exist, naming the root's teams: a
        mistyped name is seen at once, not taken for a team still to be made."""
        try:
            teams = sorted(d.name for d in (self.root / "teams").iterdir() if (d / "config.json").is_file())
        except OSError:
            teams = []
        there = f" (its teams: {', '.join(teams[:10])}{', …' if len(teams) > 10 else ''})" if teams else ""
        return (
            f"team {self.team!r} does not exist under {self.root}{there}; "
            f"create it with 'agentteams team create {self.team}'"
        )

    @property
    def inboxes(self) -> Path:
        return self.team_dir / "inboxes"

    def inbox(self, agent: str) -> Path:
        return self.inboxes / f"{normalise_agent_name(agent)}.json"

    def inbox_archive(self, agent: str) -> Path:
        # Outside inboxes/ so that nothing that lists inboxes mistakes an archive for one.
        return self.team_dir / "archive" / f"{normalise_agent_name(agent)}.jsonl"

    @property
    def events(self) -> Path:
        return self.team_dir / "events.jsonl"

    def transcript(self, agent: str) -> Path:
        return self.team_dir / "transcripts" / f"{normalise_agent_name(agent)}.jsonl"

    def subagent_result(self, subagent: str) -> Path:
        return self.team_dir / "subagents" / f"{normalise_agent_name(subagent)}.json"

    def fork_base(self, parent: str, tool_use_id: str) -> Path:
        """What a fork of ``parent`` started by its call ``tool_use_id`` is sent as its parent
        was: the system prompt and tool definitions (ipc.subagents.ForkBase)."""
        return (
            self.team_dir
            / "forks"
            / f"{normalise_agent_name(parent)}.{normalise_agent_name(tool_use_id)}.json"
        )

    @property
    def plans(self) -> Path:
        return self.team_dir / "plans"

    @property
    def tasks_dir(self) -> Path:
        return self.root / "tasks" / self.team

    def task(self, task_id: str) -> Path:
        if not TASK_ID.fullmatch(task_id):
            raise InvalidInput(f"task id {task_id!r} is not a task number like '7'")
        return child_path(self.tasks_dir, f"{task_id}.json")

    @property
    def tasks_lock(self) -> Path:
        return self.tasks_dir / ".lock"

    @property
    def highwatermark(self) -> Path:
        return self.tasks_dir / ".highwatermark"

    @property
    def worktrees(self) -> Path:
        # Beside teams/ and tasks/, not in the team's directory: a worktree with changes is
        # kept, and outlives the team.
        return self.root / "worktrees" / self.team

    def runtime_dir(self) -> Path:
        """This team's private runtime directory (sockets, pid file, logs), created if
        missing; checked once per TeamPaths object, since a hot path (every wake) asks for it."""
        if self._runtime is None:
            base, path = runtime_base_path(), self.runtime_path()
            ensure_private_dir(base)  # refused when unsafe, also if a long path falls back to /tmp
            if path.parent != base:
                ensure_private_dir(path.parent)
            self._runtime = ensure_private_dir(path)
            owner = path / ROOT_FILE  # whose it is: a clean-up can tell a team's from another's
            if not owner.exists():
                owner.write_text(f"{self.root}\n{self.team}\n")
        return self._runtime

    def existing_runtime_dir(self) -> Path | None:
        """The runtime directory if it exists (checked as :meth:`runtime_dir` does), else
        None: a look at a team that is not up creates nothing."""
        return self.runtime_dir() if self._runtime is not None or self.runtime_path().is_dir() else None

    def runtime_path(self) -> Path:
        """Where the runtime directory is, whether or not it exists."""
        # One per (root, team): two roots may hold teams of the same name. Hashed to keep
        # ipc:// socket paths under the 107-byte sun_path limit.
        digest = hashlib.sha256(f"{self.root}\0{self.team}".encode()).hexdigest()[:12]
        leaf = f"{self.team[:24]}-{digest}"
        base = runtime_base_path()
        if len(str(base / leaf)) > MAX_RUNTIME_PATH:
            base = Path(f"/tmp/agentteams-{os.getuid()}")
        return base / leaf

    def log(self, agent: str = "") -> Path:
        """The supervisor's log, or an agent's (its output and errors), in the runtime directory."""
        logs = self.runtime_path()
        return logs / "supervisor.log" if not agent else logs / "logs" / f"{normalise_agent_name(agent)}.log"

    def host_log(self) -> Path:
        """The log of the team's in-process host: its teammates' lines, each tagged with its name."""
        return self.runtime_path() / "logs" / "in-process-host.log"


def remove_runtime_dirs(under: Path) -> None:
    """Remove the runtime directories of the teams whose state root is ``under`` or inside it
    (each names its root in :data:`ROOT_FILE`): for whoever removes a whole root, such as a
    test or a benchmark's scratch directory."""
    for base in {runtime_base_path(), Path(f"/tmp/agentteams-{os.getuid()}")}:
        if not base.is_dir():
            continue
        for runtime in base.iterdir():
            try:
                root = (runtime / ROOT_FILE).read_text().splitlines()[0]
            except (OSError, IndexError):
                continue
            if Path(root).is_relative_to(under):
                shutil.rmtree(runtime, ignore_errors=True)


def runtime_base_path() -> Path:
    """``$XDG_RUNTIME_DIR/agentteams`` or ``/tmp/agentteams-{uid}`` (not created)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "agentteams" if xdg else Path(f"/tmp/agentteams-{os.getuid()}")


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` 0700 if missing; refuse it if another user owns it or others can enter.

    As tmux does for /tmp/tmux-{uid}: a directory someone else controls could hold a socket
    that impersonates our supervisor.
    """
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError as exc:
        raise UnsafeRuntimeDir(f"cannot create runtime directory {path}: {exc.strerror}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeRuntimeDir(f"runtime directory {path} is not a directory (a symlink?); remove it")
    if info.st_uid != os.getuid():
        raise UnsafeRuntimeDir(
            f"runtime directory {path} is owned by uid {info.st_uid}, not {os.getuid()}; refusing to use it"
        )
    if info.st_mode & 0o077:
        raise UnsafeRuntimeDir(
            f"runtime directory {path} has mode {stat.S_IMODE(info.st_mode):o}; it must be 700 (chmod 700 {path})"
        )
    return path
