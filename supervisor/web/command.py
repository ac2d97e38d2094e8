"""``agentteams serve [--host 127.0.0.1] [--port 8765] [--token T] [--mcp TEAM]``: the
dashboard and the JSON API of every team under the root. Light to import (the parser of
every command has it): the web stack is loaded only when it serves."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

HELP = "serve a live dashboard page and the JSON/SSE API of the root's teams"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8765, help="the port (0: any free one)")
    parser.add_argument(
        "--token", default=None, help="the token (default: $AGENTTEAMS_WEB_TOKEN or a new random one)"
    )
    parser.add_argument(
        "--mcp",
        default=None,
        metavar="TEAM",
        help="also serve this team's MCP endpoint at /mcp (the lead side)",
    )


def run(args: argparse.Namespace) -> int:
    from ipc.errors import InvalidInput
    from ipc.paths import resolve_root
    from supervisor.client.handle import TeamHandle
    from supervisor.mcp.http import hosts_for, listen, new_token, serve
    from supervisor.web.app import web_app
    from supervisor.web.events import Hubs

    if not 0 <= args.port <= 65535:
        raise InvalidInput(f"--port {args.port} is not a port; give 0-65535 (0: any free one)")
    if args.mcp:
        with TeamHandle(args.mcp, args.root) as team:
            team.store.read()  # an unknown team: one line, exit 1, before anything listens
    host = args.host.strip("[]")
    sock = listen(f"[{host}]:{args.port}" if ":" in host else f"{host}:{args.port}")
    token = args.token or os.environ.get("AGENTTEAMS_WEB_TOKEN") or new_token()
    hosts = hosts_for(sock)  # for a wildcard bind, this machine's names and addresses too
    hubs = Hubs()
    app = web_app(args.root, token=token, allowed_hosts=hosts, mcp_team=args.mcp, hubs=hubs)
    base = f"http://{hosts[0]}"
    if host not in LOOPBACK:
        print(
            f"agentteams: warning: serving on {host}, not only this machine: anyone who can reach "
            f"port {sock.getsockname()[1]} and has the token controls these teams (plain HTTP: "
            "the token crosses the network unencrypted)",
            file=sys.stderr,
        )

    def ready() -> None:
        if args.json:
            print(json.dumps({"url": f"{base}/?token={token}", "base": base, "token": token}))
        else:
            print(f"agentteams dashboard for the teams in {resolve_root(args.root)}:")
            print(f"  {base}/?token={token}")
            print(f"API at {base}/api/v1/ (header 'Authorization: Bearer {token}'); Ctrl-C stops")
            if args.mcp:
                print(f"MCP endpoint of team {args.mcp} at {base}/mcp")
        sys.stdout.flush()

    try:
        serve(app, sock, ready, on_stop=hubs.stop)
    except KeyboardInterrupt:
        pass  # SIGTERM or Ctrl-C: the server has stopped
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"serve": run}
