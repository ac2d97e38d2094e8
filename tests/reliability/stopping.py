"""A long run that a person or a CI job stops with SIGTERM or Ctrl-C must not leave its team
running: the supervisor runs in its own session, so a run that just died left it and its
teammates behind. :data:`STOP`, once installed, makes either signal an exception raised where
the run is, so that its ``finally`` brings the team down."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


class Interrupted(BaseException):  # not an Exception: no `except Exception` on the way swallows it
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stop:
    """Once installed, SIGTERM and SIGINT raise :class:`Interrupted` where the run is, so that
    its ``finally`` brings the team down (the supervisor runs in its own session: a soak that
    just died left it and its teammates running). While the team starts or goes down the signal
    waits (:meth:`held`): raised there, it would leave a supervisor that no pid file names yet,
    or a team half down. A second signal adds nothing: the first is being acted on."""

    def __init__(self) -> None:
        self.signum = 0
        self.holding = 0
        self.raised = False

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self.signum:
            self.signum = signum
            self._raise()

    def _raise(self) -> None:
        if self.signum and not self.holding and not self.raised:
            self.raised = True
            raise Interrupted(self.signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
        self._raise()


STOP = Stop()
