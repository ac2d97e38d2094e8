"""The lead side of agentteams: the supervisor daemon, team lifecycle, process tree and CLI.

``Team`` is imported on first use, so that programs which need only a part of this
package (the fork server, above all, whose memory every teammate inherits) stay small.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from supervisor.client.team import Team

__all__ = ["Team"]


def __getattr__(name: str) -> Any:
    if name == "Team":
        from supervisor.client.team import Team

        return Team
    raise AttributeError(f"module 'supervisor' has no attribute {name!r}")
