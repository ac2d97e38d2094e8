"""Reading agentteams' environment settings on the hot path.

``os.environ.get`` walks several Python frames to encode the key and decode the value;
after an idle spell that costs tens of microseconds on a path whose budget is a few
hundred. CPython keeps the environment as a dict of bytes beside the mapping, always in
step with it (``os.environ[...] = ...`` and ``putenv`` through it update both), so a
lookup there is one dict access. Other interpreters take the ordinary way.
"""

from __future__ import annotations

import os

_data: dict[bytes, bytes] | None = getattr(os.environ, "_data", None)


def env(name: str, default: str = "") -> str:
    """The value of environment variable ``name``, or ``default``."""
    if _data is None:
        return os.environ.get(name, default)
    value = _data.get(name.encode())
    return default if value is None else value.decode(errors="surrogateescape")
