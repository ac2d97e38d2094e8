"""``agentteams mcp TEAM [--as NAME] [--http [HOST:]PORT] [--print-config FORMAT]``. Light to
import (`agentteams --help` builds every command's parser): the SDK is loaded only when the door runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from ipc.launch import DEFAULT_FALLBACK_POLL
from ipc.paths import normalise_agent_name
from supervisor.client.handle import TeamHandle
from supervisor.mcp import client_config

HELP = "serve a team to any MCP client (stdio, or streamable HTTP with --http)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team")
    parser.add_argument(
        "--as", dest="as_member", default=None, metavar="NAME", help="join the team as this member"
    )
    parser.add_argument(
        "--http",
        default=None,
        metavar="[HOST:]PORT",
        help="streamable HTTP instead of stdio (a port alone: 127.0.0.1, this machine only)",
    )
    parser.add_argument(
        "--token", default=None, help="the HTTP token (default: $AGENTTEAMS_MCP_TOKEN or a new one)"
    )
    parser.add_argument(
        "--print-config",
        nargs="?",
        const="claude",
        default=None,
        choices=client_config.FORMATS,
        help="print a client's config entry for this server and exit",
    )
    parser.add_argument(
        "--fallback-poll",
        type=float,
        default=DEFAULT_FALLBACK_POLL,
        help="seconds between safety re-reads of the inbox while waiting",
    )


def run(args: argparse.Namespace) -> int:
    team = TeamHandle(args.team, args.root)
    team.store.read()  # an unknown team: one line, exit 1
    if args.as_member is not None:
        asked = args.as_member
        args.as_member = normalise_agent_name(asked)  # a name it cannot take: one line, exit 1
        if args.as_member != asked:  # said, since the client is told nothing of it
            print(
                f"agentteams: joining as {args.as_member!r}: a member's name keeps letters, digits, '-' and '_'",
                file=sys.stderr,
            )
    if args.print_config:
        if (
            args.as_member is not None
        ):  # a name the server would refuse: said now, not to a client that shows nothing
            from supervisor.mcp.member import Membership

            Membership(team, args.as_member).check()
        print(client_config.render(args.print_config, team.name, args.as_member, args.root))
        return 0
    from supervisor.mcp.http import hosts_for, http_app, listen, new_token, serve
    from supervisor.mcp.server import run_stdio

    if not args.http:
        run_stdio(team, args.as_member, fallback_poll=args.fallback_poll)
        return 0
    team.close()
    sock = listen(args.http)
    token = args.token or os.environ.get("AGENTTEAMS_MCP_TOKEN") or new_token()
    hosts = hosts_for(sock)
    bound = sock.getsockname()[0]
    if bound not in ("127.0.0.1", "::1"):
        print(
            f"agentteams: warning: serving on {bound}, not only this machine: anyone who can reach "
            f"port {sock.getsockname()[1]} and has the token acts in team {team.name} (plain HTTP: "
            "the token crosses the network unencrypted)",
            file=sys.stderr,
        )
    app = http_app(
        args.root,
        team.name,
        args.as_member,
        token=token,
        allowed_hosts=hosts,
        fallback_poll=args.fallback_poll,
    )
    url = f"http://{hosts[0]}/mcp"

    def ready() -> None:
        if args.json:
            print(json.dumps({"team": team.name, "member": args.as_member, "url": url, "token": token}))
        else:
            print(f"MCP server for team {team.name} at {url}; send 'Authorization: Bearer {token}'")
        sys.stdout.flush()

    try:
        serve(app, sock, ready)
    except KeyboardInterrupt:
        pass  # SIGTERM or Ctrl-C: the server has stopped and the member left
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"mcp": run}
