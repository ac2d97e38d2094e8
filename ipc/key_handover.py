"""A teammate's private key on its way from the supervisor to the process that signs with
it (:mod:`ipc.trust`), taken once: through a pipe the process inherits, or, for a tmux
pane's teammate, which no pipe of ours reaches, a private file it reads and removes."""

from __future__ import annotations

import os

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ipc.trust import key_bytes, key_from_bytes

KEY_FD_ENV = "AGENTTEAMS_KEY_FD"  # the number of the inherited pipe that carries a key (not the key)
# A tmux pane's teammate, which no pipe of ours reaches: the path of a 0600 file in the team's
# private runtime directory that holds its key, read once and removed (not the key itself:
# a process's first environment stays readable in /proc by every process of its user).
KEY_FILE_ENV = "AGENTTEAMS_KEY_FILE"


def hand_key(key: Ed25519PrivateKey) -> int:
    """A pipe's read end holding the key (the writer closed): the caller passes it to the
    child process and closes its own copy."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, key_bytes(key))
    finally:
        os.close(write_end)
    return read_end


def take_key(environ: dict[str, str] | os._Environ[str] | None = None) -> Ed25519PrivateKey | None:
    """The key handed to this process (read once; the pipe closed and its number forgotten)."""
    env = os.environ if environ is None else environ
    number, path = env.pop(KEY_FD_ENV, ""), env.pop(KEY_FILE_ENV, "")
    if path:
        try:
            with open(path, "rb") as f:
                data = f.read(64)
            os.unlink(path)
        except OSError:
            return None
        return key_from_bytes(data) if len(data) == 32 else None
    if not number.isdigit():
        return None
    fd = int(number)
    try:
        data = os.read(fd, 64)
    except OSError:
        return None
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    return key_from_bytes(data) if len(data) == 32 else None
