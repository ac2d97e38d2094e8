"""The real Claude Code (and proper-lockfile, the lock library it bundles) from the npm
registry, for interop tests: installed once into a cache outside the repository (pinned
versions), and run headless against :mod:`tests.fake_anthropic` with no other host reachable.

If npm cannot install a version, the tests that need it are skipped with the reason, in the
summary pytest prints (``-ra``)."""

from __future__ import annotations

import fcntl
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("AGENTTEAMS_CC_CACHE", str(Path.home() / ".cache" / "agentteams-cc")))
SEEDS_VERSION = "2.1.38"  # the version whose shapes our defaults follow; node's cli.js
CURRENT_VERSION = "2.1.330"  # the current release; a native binary (~380 MB)
PROPER_LOCKFILE = "4.1.2"
INSTALL_TIMEOUT = 900


def _npm_install(folder: Path, package: str, *, gives: Path) -> None:
    """``npm install package`` into ``folder`` unless ``gives`` exists (once: concurrent
    callers wait for the first)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if gives.exists():
            return
        try:
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), package],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"NOT TESTED: cannot install {package} from the npm registry: {exc}")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            pytest.skip(f"NOT TESTED: npm could not install {package}: {last}")


@dataclass(frozen=True)
class ClaudeCode:
    version: str
    executable: Path  # what AGENTTEAMS_CLAUDE_BIN names: cli.js, or the native binary

    @property
    def command(self) -> list[str]:
        return ["node", str(self.executable)] if self.executable.suffix == ".js" else [str(self.executable)]


def claude_code(version: str) -> ClaudeCode:
    folder = CACHE / version
    modules = folder / "node_modules" / "@anthropic-ai"
    candidates = (modules / "claude-code" / "cli.js", modules / "claude-code-linux-x64" / "claude")
    if not any(c.exists() for c in candidates):
        _npm_install(
            folder, f"@anthropic-ai/claude-code@{version}", gives=modules / "claude-code" / "package.json"
        )
    for candidate in candidates:
        if candidate.exists():
            return ClaudeCode(version, candidate)
    pytest.skip(
        f"NOT TESTED: Claude Code {version} installed without an executable for this machine in {modules}"
    )


def proper_lockfile() -> Path:
    """The proper-lockfile package directory (Claude Code bundles this library)."""
    folder = CACHE / f"proper-lockfile-{PROPER_LOCKFILE}"
    package = folder / "node_modules" / "proper-lockfile"
    if not (package / "package.json").exists():
        _npm_install(folder, f"proper-lockfile@{PROPER_LOCKFILE}", gives=package / "package.json")
    return package


def environment(home: Path, api_url: str, **extra: str) -> dict[str, str]:
    """Claude Code headless against ``api_url`` and nothing else: a private HOME, a dummy
    key, every non-essential call off, and proxies to a closed port for anything missed."""
    closed = "http://127.0.0.1:9"
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdefghijklmnop",
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        "CLAUDE_CODE_ENABLE_TASKS": "1",
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "http_proxy": closed,
        "https_proxy": closed,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "npm_config_registry": closed,  # its update check runs npm
        "npm_config_offline": "true",
        **extra,
    }


def debug_log(root: Path) -> str:
    """Everything Claude Code wrote with ``--debug`` under its config root."""
    return "\n".join(p.read_text(errors="replace") for p in (root / "debug").glob("*.txt"))
