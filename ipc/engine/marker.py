"""What a root remembers of an engine team: ``teams/{team}/engine.json`` holds the engine's
URL and this host's name. Written when a team is created in the engine from this root or
when this host joins it (``up --engine``); read by every process of the team on this host,
so each builds the engine-backed stores (:mod:`ipc.team_state`). A team without one, and
no ``--engine``, is a team of files, as it always was.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

import msgspec

from ipc.engine.url import from_env, parse
from ipc.errors import CorruptFile, InvalidInput
from ipc.paths import TeamPaths
from ipc.storage import atomic_write, ensure_dir, read_bytes

MARKER = "engine.json"


class _Marker(msgspec.Struct, forbid_unknown_fields=False):
    url: str
    host: str = ""


@dataclass(frozen=True)
class Link:
    """An engine team as seen from this root: the engine's URL and this host's name."""

    url: str
    host: str
    remembered: bool = False  # the root's marker holds this URL (else --engine / the environment gave it)


def default_host() -> str:
    """This machine's name, made usable (a name of its own that nobody typed)."""
    return _usable(socket.gethostname())


def _usable(name: str) -> str:
    clean = re.sub(r"[^a-zA-Z0-9_-]", "-", name.strip())[:64].strip("-")
    return clean or "host"


def host_name(name: str) -> str:
    """``name`` if it is usable in subjects and keys as it is; a name given is never
    rewritten, since what it became ('gpu.box': 'gpu-box') could be another host's."""
    if name != _usable(name):
        raise InvalidInput(
            f"host name {name!r} is not allowed; use 1-64 letters, digits, '-' and '_', "
            "not starting or ending with '-'"
        )
    return name


def read(paths: TeamPaths) -> Link | None:
    """The engine the team is on: ``--engine`` / ``$AGENTTEAMS_ENGINE`` when given (a moved
    engine, a changed password), as the host this root remembers if it remembers the team;
    else the engine this root remembers; else None (a team of files). A team this root has
    files of and no memory of an engine stays files, whatever the environment says."""
    path = paths.team_dir / MARKER
    data = read_bytes(path)
    url = from_env()
    if url:
        parse(url)  # a bad URL is an error now, not a team of files
    kept: Link | None = None
    if data is not None:
        try:
            found = msgspec.json.decode(data, type=_Marker)
            parse(found.url)
            host = host_name(found.host) if found.host else default_host()  # a hand edit: checked as given
            kept = Link(url=found.url, host=host, remembered=True)
        except (msgspec.DecodeError, msgspec.ValidationError, InvalidInput) as exc:
            if not url:  # never a team of files by accident: its tasks would go where no host looks
                detail = exc.message if isinstance(exc, InvalidInput) else str(exc)
                raise CorruptFile(
                    path,
                    f"not a valid engine marker ({detail}); give --engine URL, or repair the file "
                    "(or remove it if the team is not on an engine)",
                ) from None
    if not url:
        return kept
    if kept is not None:
        return Link(url=url, host=kept.host, remembered=url == kept.url)
    if data is None and paths.config.exists():
        return None
    return Link(url=url, host=default_host())  # a damaged marker: up --engine rewrites it


def remember(paths: TeamPaths, url: str, host: str) -> None:
    """This root has joined the engine team at ``url`` as ``host``."""
    parse(url)
    ensure_dir(paths.team_dir)
    atomic_write(
        paths.team_dir / MARKER, msgspec.json.format(msgspec.json.encode(_Marker(url, host)), indent=2)
    )


def forget(paths: TeamPaths) -> None:
    (paths.team_dir / MARKER).unlink(missing_ok=True)
