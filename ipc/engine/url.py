"""Where the engine is and how to log in: ``nats://[user:password@]HOST[:PORT]`` or
``tls://…`` (TLS), from ``--engine``, ``$AGENTTEAMS_ENGINE`` or the team's marker; a
credentials file from ``$AGENTTEAMS_NATS_CREDS``. Checked here, once, so a bad URL is a
one-line error before anything connects."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

from ipc.errors import InvalidInput

DEFAULT_PORT = 4222
SCHEMES = ("nats", "tls")


@dataclass(frozen=True)
class EngineUrl:
    url: str  # as given, credentials included (it is what a marker remembers)
    server: str  # scheme://host:port, without credentials
    user: str = ""
    password: str = ""
    creds: str = ""  # a NATS credentials file
    tls: bool = False

    @property
    def shown(self) -> str:
        """The URL without its password, for messages and logs."""
        return self.server


def parse(url: str) -> EngineUrl:
    """``url`` checked; InvalidInput naming what is wrong and what would be right."""
    text = url.strip()
    parts = urlsplit(text if "://" in text else f"nats://{text}")
    url = _without_password(text)  # the messages below name the URL, never its password
    if parts.scheme not in SCHEMES:
        raise InvalidInput(
            f"engine URL {url!r} has scheme {parts.scheme!r}; use nats://HOST:PORT or tls://HOST:PORT"
        )
    _check_credentials(text, parts)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise InvalidInput(f"engine URL {url!r} has a bad port; use nats://HOST:PORT") from None
    if not parts.hostname:
        raise InvalidInput(f"engine URL {url!r} names no host; use nats://HOST:PORT")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InvalidInput(f"engine URL {url!r} has a path or query; use nats://HOST:PORT")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return EngineUrl(
        url=text if "://" in text else f"nats://{text}",
        server=f"{parts.scheme}://{host}:{port}",
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        creds=os.environ.get("AGENTTEAMS_NATS_CREDS", ""),
        tls=parts.scheme == "tls",
    )


def _login(text: str) -> tuple[str, str, str] | None:
    """(``scheme://``, the login before the last '@', the rest) as written, or None: no '@'."""
    scheme, sep, rest = text.partition("://") if "://" in text else ("", "", text)
    login, at, server = rest.rpartition("@")
    return (f"{scheme}{sep}", login, server) if at else None


def _without_password(text: str) -> str:
    """``text`` with its password (if any) shown as '…': errors and logs are read by others."""
    found = _login(text)
    if found is None or ":" not in found[1]:
        return text
    start, login, server = found
    return f"{start}{login.partition(':')[0]}:…@{server}"


def _check_credentials(text: str, parts: SplitResult) -> None:
    """A '/', '?' or '#' in the user or password ends the address where a URL reads it: the
    rest looked like a bad port or a path. Said as what it is, without the password."""
    written = _login(text)
    if written is None or "@" in parts.netloc:
        return
    _, login, server = written
    user, _, password = login.partition(":")
    whose, value = ("user", user) if any(ch in user for ch in "/?#") else ("password", password)
    found = [repr(ch) for ch in "/?#" if ch in value]
    codes = ", ".join(f"{ch} as %{ord(ch[1]):02X}" for ch in found)
    said = " and ".join([", ".join(found[:-1]), found[-1]] if len(found) > 1 else found)
    raise InvalidInput(
        f"engine URL {parts.scheme}://…@{server}: its {whose} has {said}, where a URL ends the "
        f"address; percent-encode {'it' if len(found) == 1 else 'them'} in the URL ({codes})"
    )


def from_env() -> str:
    """``$AGENTTEAMS_ENGINE`` (what ``--engine`` sets for the command and its children)."""
    return os.environ.get("AGENTTEAMS_ENGINE", "").strip()
