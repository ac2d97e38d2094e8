"""The lead side of agentteams: the supervisor daemon, team lifecycle, process tree and CLI."""

from supervisor.team import Team

__all__ = ["Team"]
