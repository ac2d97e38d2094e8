"""The supervisor daemon: one process per team that forks, reaps, restarts and stops its
agents (``python -m supervisor.daemon``). It meets the client side only over the control
socket and the files and sockets of :mod:`ipc`.

Empty on purpose: the fork server imports from here, and every teammate it forks inherits
its memory.
"""
