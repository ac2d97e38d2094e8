"""The lead side of agentteams: the supervisor daemon, team lifecycle, process tree and CLI.

``Team`` is imported on first use, so that programs which need only a part of this
package (the fork server, above all, whose memory every teammate inherits) stay small.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a quick command's start-up does without importing typing
if TYPE_CHECKING:
    from typing import Any

    from supervisor.client.team import Team

__all__ = ["Team"]


def __getattr__(name: str) -> Any:
    if name == "Team":
        from supervisor.client.team import Team

        return Team
    raise AttributeError(f"module 'supervisor' has no attribute {name!r}")
