"""A teammate's private key on its way from the supervisor to the process that signs with
it (:mod:`ipc.trust`), taken once: through a pipe the process inherits, or, for a tmux
pane's teammate, which no pipe of ours reaches, its private environment file."""

from __future__ import annotations

import os

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ipc.trust import key_bytes, key_from_bytes

KEY_FD_ENV = "AGENTTEAMS_KEY_FD"  # the number of the inherited pipe that carries a key (not the key)
# A tmux pane's teammate gets its key through the pane's private environment file (which the
# pane removes once read; no pipe reaches a process the tmux server starts), then drops it.
KEY_ENV = "AGENTTEAMS_KEY"


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
    number, written = env.pop(KEY_FD_ENV, ""), env.pop(KEY_ENV, "")
    if written:  # its tools will not inherit it: popped from the environment
        try:
            return key_from_bytes(bytes.fromhex(written))
        except ValueError:
            return None
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
