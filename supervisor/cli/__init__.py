"""The `agentteams` command line: a door onto the client side (:mod:`supervisor.client`)."""

from supervisor.cli.main import main

__all__ = ["main"]
