"""`agentteams bench [suite] [--quick]`: run, print tables, write JSON and PNG plots."""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks import (
    backends,
    caching,
    claude_socket,
    cli,
    contention,
    exchange,
    growth,
    hosts,
    idle,
    latency,
    mcp_door,
    scale,
    spawn,
    tasks,
    teardown,
    web_door,
)
from benchmarks.common import machine

SUITES: dict[str, Callable[[bool], dict[str, Any]]] = {
    "latency": latency.run,
    "exchange": exchange.run,
    "contention": contention.run,
    "growth": growth.run,
    "spawn": spawn.run,
    "idle": idle.run,
    "tasks": tasks.run,
    "caching": caching.run,
    "mcp": mcp_door.run,
    "claude_socket": claude_socket.run,
    "hosts": hosts.run,
    "teardown": teardown.run,
    "cli": cli.run,
    "scale": scale.run,
    "web": web_door.run,
    "backends": backends.run,
}
# claude_socket runs the real claude, scale thousands of teammates: `bench all --quick`
# (make test-heavy) leaves them out.
NOT_QUICK = {"claude_socket", "scale"}
DEFAULT_OUT = Path(__file__).parent / "results"


def _ms(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _billed(title: str, columns: tuple[str, str, str], rows: list[tuple[int, int, int]]) -> Table:
    """A table of tokens billed: a count, then two ways of sending the same requests."""
    t = Table(title=title)
    for col in columns:
        t.add_column(col, justify="right")
    for n, first, second in rows:
        t.add_row(str(n), f"{first:,}", f"{second:,}")
    return t


def tables(results: dict[str, Any]) -> list[Table]:
    out: list[Table] = []
    if "latency" in results:
        t = Table(title="send → the recipient's turn starts (ms, one way), and where the time went (p50)")
        cols = ("path", "wake", "teammates", "traffic", "inbox", "n", "p50", "p90", "p99", "max", "lost")
        for col in (*cols, "write", "ring", "wake", "take"):
            t.add_column(col, justify="right" if col not in ("path", "wake", "traffic") else "left")
        for r in results["latency"]["rows"]:
            stage = r.get("stages_ms") or {}
            t.add_row(
                r["path"],
                r["wake"],
                str(r["teammates"] or "-"),
                r["traffic"],
                str(r["inbox"] or "-"),
                str(r["n"]),
                _ms(r["p50"]),
                _ms(r["p90"]),
                _ms(r["p99"]),
                _ms(r["max"]),
                str(r["lost"]),
                *(_ms(stage[k]) if k in stage else "-" for k in ("write", "wake_send", "wake", "take")),
            )
        out.append(t)
    if "exchange" in results:
        t = Table(title="exchanges through real turns")
        for col in ("measure", "wake", "size", "seconds", "rate"):
            t.add_column(col, justify="right" if col != "measure" else "left")
        for r in results["exchange"]["round_trips"]:
            t.add_row(
                "round trips, two teammates",
                r["wake"],
                str(r["round_trips"]),
                f"{r['seconds']:.2f}",
                f"{r['round_trips_per_s']:.1f}/s",
            )
        for r in results["exchange"]["fan_in"]:
            t.add_row(
                f"fan-in, {r['senders']} → lead ({r['unique']}/{r['senders'] * r['each']} unique)",
                r["wake"],
                str(r["senders"] * r["each"]),
                f"{r['seconds']:.2f}",
                f"{r['messages_per_s']:.0f} msg/s",
            )
        out.append(t)
    if "contention" in results:
        t = Table(title="N processes appending to one inbox")
        for col in (
            "writers",
            "appends",
            "appends/s",
            "lock wait p50 ms",
            "lock wait p99 ms",
            "fairness (Jain)",
            "exactly once",
        ):
            t.add_column(col, justify="right")
        for r in results["contention"]["appends"]:
            t.add_row(
                str(r["writers"]),
                str(r["appends"]),
                f"{r['appends_per_s']:.0f}",
                _ms(r["lock_wait_ms"]["p50"]),
                _ms(r["lock_wait_ms"]["p99"]),
                f"{r['fairness_jain']:.3f}",
                "yes" if r["exactly_once"] else "NO",
            )
        out.append(t)
        t = Table(title="N claimers racing for K tasks")
        for col in ("claimers", "tasks", "claims/s", "exactly once"):
            t.add_column(col, justify="right")
        for r in results["contention"]["claims"]:
            t.add_row(
                str(r["claimers"]),
                str(r["tasks"]),
                f"{r['claims_per_s']:.0f}",
                "yes" if r["exactly_once"] else "NO",
            )
        out.append(t)
    if "growth" in results:
        t = Table(title="append cost against inbox history (ms)")
        for col in ("method", "history", "p50", "p90", "p99", "max"):
            t.add_column(col, justify="right" if col != "method" else "left")
        for r in results["growth"]["rows"]:
            t.add_row(
                r["method"], f"{r['history']:,}", _ms(r["p50"]), _ms(r["p90"]), _ms(r["p99"]), _ms(r["max"])
            )
        out.append(t)
    if "spawn" in results:
        t = Table(title="spawn → ready (ms) and memory per idle teammate")
        for col in ("method", "n", "p50", "p90", "p99", "max"):
            t.add_column(col, justify="right" if col != "method" else "left")
        for r in results["spawn"]["spawn"]:
            t.add_row(r["method"], str(r["n"]), _ms(r["p50"]), _ms(r["p90"]), _ms(r["p99"]), _ms(r["max"]))
        for r in results["spawn"]["uss"]:
            t.add_row(f"USS per teammate, {r['teammates']} idle", "", f"{r['uss_mib']:.1f} MiB", "", "", "")
        out.append(t)
    if "tasks" in results:
        t = Table(title="task create → claimed by an idle teammate (ms)")
        for col in ("via", "teammates", "n", "p50", "p90", "p99", "max", "lost", "to wake p50", "claim p50"):
            t.add_column(col, justify="right" if col != "via" else "left")
        for r in results["tasks"]["rows"]:
            t.add_row(
                r["via"],
                str(r["teammates"]),
                str(r["n"]),
                _ms(r["p50"]),
                _ms(r["p90"]),
                _ms(r["p99"]),
                _ms(r["max"]),
                str(r["lost"]),
                _ms(r.get("to_wake_p50", float("nan"))),
                _ms(r.get("claim_p50", float("nan"))),
            )
        out.append(t)
        t = Table(
            title="a burst of tasks into idle teammates (s: the creating call, then to the last completed; the median run)"
        )
        burst_cols = (
            "teammates",
            "tasks",
            "completed",
            "runs",
            "seconds",
            "create",
            "work",
            "tasks/s",
            "wakes",
            "wakes/task",
        )
        for col in burst_cols:
            t.add_column(col, justify="right")
        for r in results["tasks"]["bursts"]:
            t.add_row(
                str(r["teammates"]),
                str(r["tasks"]),
                str(r["completed"]),
                str(r.get("rounds", 1)),
                f"{r['seconds']:.2f}",
                f"{r.get('create_s', math.nan):.2f}",
                f"{r.get('work_s', math.nan):.2f}",
                f"{r['tasks_per_s']:.0f}",
                str(r["wakes"]),
                f"{r['wakes_per_task']:.2f}",
            )
        out.append(t)
    if "hosts" in results:
        h = results["hosts"]
        t = Table(title="a team on the engine beside the same team on files: send → turn (ms, one way)")
        for col in ("path", "n", "p50", "p90", "p99", "max", "lost", "write", "ring", "wake", "take"):
            t.add_column(col, justify="right" if col != "path" else "left")
        for r in h["rows"]:
            stage = r.get("stages_ms") or {}
            t.add_row(
                r["path"],
                str(r["n"]),
                *(_ms(r[k]) for k in ("p50", "p90", "p99", "max")),
                str(r["lost"]),
                *(_ms(stage[k]) if k in stage else "-" for k in ("write", "wake_send", "wake", "take")),
            )
        out.append(t)
        t = Table(title="claimers racing for tasks: engine (claimers on two hosts) and files (one host)")
        for col in ("store", "claimers", "tasks", "claims/s", "each once"):
            t.add_column(col, justify="right" if col != "store" else "left")
        for r in h["claims"]:
            t.add_row(
                r["store"],
                str(r["claimers"]),
                str(r["tasks"]),
                f"{r['claims_per_s']:.0f}",
                str(r["exactly_once"]),
            )
        b = h["bridge"]
        t.add_row(
            "sync↔asyncio bridge, one empty call (ms)",
            "",
            "",
            f"p50 {_ms(b['bridge_noop_ms']['p50'])} p99 {_ms(b['bridge_noop_ms']['p99'])}",
            "",
        )
        for key, what in (
            ("kv_get_ms", "one KV read from the server (ms)"),
            ("kv_cas_ms", "one KV compare-and-set (ms)"),
            ("publish_ms", "one stream publish, acknowledged (ms)"),
        ):
            t.add_row(what, "", "", f"p50 {_ms(b[key]['p50'])} p99 {_ms(b[key]['p99'])}", "")
        out.append(t)
    if "backends" in results:
        t = Table(title="in-process teammates beside processes: memory (USS) and send → turn (ms)")
        for col in ("backend", "teammates", "processes", "MiB", "MiB / teammate", "p50", "p99", "lost"):
            t.add_column(col, justify="right" if col != "backend" else "left")
        for r in results["backends"]["rows"]:
            t.add_row(
                r["path"],
                str(r["teammates"]),
                str(r["processes"]),
                f"{r['uss_mib']:.1f}",
                f"{r['uss_mib_per_teammate']:.2f}",
                _ms(r["p50"]),
                _ms(r["p99"]),
                str(r["lost"]),
            )
        out.append(t)
    if "idle" in results:
        t = Table(title="idle cost per teammate per minute")
        for col in ("wake", "teammates", "measured s", "CPU s", "read syscalls"):
            t.add_column(col, justify="right")
        for r in results["idle"]["rows"]:
            t.add_row(
                r["wake"],
                str(r["teammates"]),
                f"{r['seconds']:.0f}",
                f"{r['cpu_s_per_teammate_min']:.4f}",
                f"{r['reads_per_teammate_min']:.0f}",
            )
        out.append(t)
    if "caching" in results:
        c = results["caching"]
        t = Table(
            title=f"input tokens billed per turn (input-price equivalents), {c['turns']}-turn conversation"
        )
        for col in ("turn", "uncached", "cached", "cache read", "cache write", "full-price input"):
            t.add_column(col, justify="right")
        for r in c["rows"]:
            if r["turn"] in (1, 2, 5, 10, 25, 50):
                t.add_row(
                    str(r["turn"]),
                    f"{r['uncached_billed']:,}",
                    f"{r['cached_billed']:,}",
                    f"{r['cached_cache_read']:,}",
                    f"{r['cached_cache_write']:,}",
                    f"{r['cached_input']:,}",
                )
        t.add_row("all", f"{c['billed_input_uncached']:,}", f"{c['billed_input_cached']:,}", "", "", "")
        out.append(t)
        out.append(
            _billed(
                "first requests of N forks of one parent (10 turns in): input billed, input-price equivalents",
                ("forks", "sharing the parent's prefix", "not sharing it"),
                [(r["forks"], r["shared_billed"], r["unshared_billed"]) for r in c.get("fork_rows", [])],
            )
        )
        out.append(
            _billed(
                "check-ins of a parent waiting on its subagent (10 turns in): input billed, same units",
                ("check-in", "cached", "uncached"),
                [
                    (r["check_in"], r["cached_billed"], r["uncached_billed"])
                    for r in c.get("check_in_rows", [])
                ],
            )
        )
    if "mcp" in results:
        t = Table(
            title="a teammate's send → wait_for_messages returns to an MCP client (ms, one way, spaced)"
        )
        for col in ("path", "n", "p50", "p90", "p99", "max", "lost", "team", "transport"):
            t.add_column(col, justify="right" if col != "path" else "left")
        for r in results["mcp"]["rows"]:
            stage = r.get("stages_ms") or {}
            t.add_row(
                r["path"],
                str(r["n"]),
                *(_ms(r[k]) for k in ("p50", "p90", "p99", "max")),
                str(r["lost"]),
                *(_ms(stage[k]) if k in stage else "-" for k in ("team", "transport")),
            )
        out.append(t)
    if "web" in results:
        t = Table(
            title="a write in a team → its Server-Sent Event at a client of agentteams serve (ms, spaced)"
        )
        for col in ("path", "n", "p50", "p90", "p99", "max", "lost"):
            t.add_column(col, justify="right" if col != "path" else "left")
        for r in results["web"]["rows"]:
            t.add_row(
                r["path"], str(r["n"]), *(_ms(r[k]) for k in ("p50", "p90", "p99", "max")), str(r["lost"])
            )
        out.append(t)
    if "claude_socket" in results:
        c = results["claude_socket"]
        t = Table(title="send → a claude teammate's turn starts (ms): its own socket against its inbox poll")
        cols = ("teammate", "wake", "n", "p50", "p90", "p99", "max", "send p50", "lost", "duplicated", "once")
        for col in cols:
            t.add_column(col, justify="right" if col not in ("teammate", "wake") else "left")
        if c.get("skipped"):
            t.add_row(c["skipped"], *[""] * (len(cols) - 1))
        for r in c["rows"]:
            t.add_row(
                r["path"],
                r["wake"],
                str(r["n"]),
                _ms(r["p50"]),
                _ms(r["p90"]),
                _ms(r["p99"]),
                _ms(r["max"]),
                _ms(r["send_p50"]),
                str(r["lost"]),
                str(r["duplicated"]),
                str(r["once"]),
            )
        out.append(t)
    if "teardown" in results:
        t = Table(title="stopping, from the signal to the command's exit (s)")
        for col in ("case", "n", "median", "max", "exit codes"):
            t.add_column(col, justify="right" if col != "case" else "left")
        for r in results["teardown"]["rows"]:
            t.add_row(
                r["case"],
                str(r["n"]),
                f"{r['median_s']:.2f}",
                f"{r['max_s']:.2f}",
                ",".join(map(str, r["exit_codes"])),
            )
        out.append(t)
    if "scale" in results:
        out.append(scale.table(results["scale"]))
    if "cli" in results:
        out.extend(cli.tables(results["cli"]))
    targets = [t for suite in results.values() if isinstance(suite, dict) for t in suite.get("targets", [])]
    if targets:
        t = Table(title="targets")
        t.add_column("target")
        t.add_column("measured", justify="right")
        t.add_column("met")
        for target in targets:
            t.add_row(target["target"], f"{target['value']:.3f}", "yes" if target["met"] else "NO")
        out.append(t)
    return out


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plots(results: dict[str, Any], out: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    if "latency" in results:
        fig, ax = plt.subplots(figsize=(8, 5))
        for r in results["latency"]["rows"]:
            values = sorted(r.get("values") or [])
            if not values or r["traffic"] != "spaced":
                continue
            label = (
                r["path"]
                if r["path"].startswith("floor")
                else f"{r['wake']}, {r['teammates']} teammates, inbox {r['inbox']}"
            )
            ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=label)
        ax.set_xscale("log")
        ax.set_xlabel("send → turn starts, ms (log)")
        ax.set_ylabel("fraction of messages")
        ax.set_title("latency CDF, spaced-out traffic")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        made.append(_save(plt, fig, out / "latency_cdf.png"))
    if "contention" in results:
        fig, ax = plt.subplots(figsize=(7, 4))
        rows = results["contention"]["appends"]
        ax.plot([r["writers"] for r in rows], [r["appends_per_s"] for r in rows], marker="o")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("writers")
        ax.set_ylabel("appends per second")
        ax.set_title("one inbox, N writing processes")
        ax.grid(True, alpha=0.3)
        made.append(_save(plt, fig, out / "contention.png"))
    if "growth" in results:
        fig, ax = plt.subplots(figsize=(7, 4))
        rows = results["growth"]["rows"]
        for method in dict.fromkeys(r["method"] for r in rows):
            series = [r for r in rows if r["method"] == method]
            ax.plot(
                [max(1, r["history"]) for r in series], [r["p50"] for r in series], marker="o", label=method
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("messages of history (0 plotted at 1)")
        ax.set_ylabel("append p50, ms")
        ax.set_title("append cost against history")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        made.append(_save(plt, fig, out / "growth.png"))
    if "caching" in results:
        fig, ax = plt.subplots(figsize=(7, 4))
        rows = results["caching"]["rows"]
        for mode in ("uncached", "cached"):
            ax.plot([r["turn"] for r in rows], [r[f"{mode}_billed"] for r in rows], label=mode)
        ax.set_xlabel("turn")
        ax.set_ylabel("input tokens billed (input-price equivalents)")
        ax.set_title("prompt caching over a 50-turn conversation")
        ax.legend()
        ax.grid(True, alpha=0.3)
        made.append(_save(plt, fig, out / "caching.png"))
    if "mcp" in results:
        fig, ax = plt.subplots(figsize=(8, 5))
        for r in results["mcp"]["rows"]:
            values = sorted(r.get("values") or [])
            if values:
                ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=r["path"])
        ax.set_xscale("log")
        ax.set_xlabel("send → wait_for_messages returns, ms (log)")
        ax.set_ylabel("fraction of messages")
        ax.set_title("MCP door: latency CDF, spaced-out traffic")
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
        made.append(_save(plt, fig, out / "mcp_cdf.png"))
    if results.get("claude_socket", {}).get("rows"):
        fig, ax = plt.subplots(figsize=(7, 4))
        for r in results["claude_socket"]["rows"]:
            values = sorted(r["values"])
            ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=r["wake"])
        ax.set_xlabel("send → the claude teammate's turn starts, ms")
        ax.set_ylabel("fraction of messages")
        ax.set_title(f"a real claude {claude_socket.CURRENT_VERSION} teammate: socket vs poll")
        ax.legend()
        ax.grid(True, alpha=0.3)
        made.append(_save(plt, fig, out / "claude_socket.png"))
    if "scale" in results and (path := scale.plot(plt, results["scale"], out)) is not None:
        made.append(path)
    return made


def main(
    suite: str = "all",
    quick: bool = False,
    out: Path | None = None,
    as_json: bool = False,
    max_teammates: int | None = None,
) -> int:
    """``max_teammates``: the scale suite stops at that size."""
    out = out or DEFAULT_OUT
    suites: dict[str, Callable[[bool], dict[str, Any]]] = {
        **SUITES,
        "scale": functools.partial(scale.run, max_teammates=max_teammates),
    }
    # Teammates of benchmark teams load benchmarks.models from this checkout.
    checkout = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH", "")) if p)
    if suite != "all" and suite not in SUITES:
        from ipc.errors import InvalidInput

        raise InvalidInput(f"unknown benchmark suite {suite!r}; use one of {', '.join(SUITES)} or all")
    out.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=as_json, width=None if sys.stdout.isatty() else 150)
    chosen = [s for s in SUITES if not (quick and s in NOT_QUICK)] if suite == "all" else [suite]
    results: dict[str, Any] = {
        "machine": machine(),
        "quick": quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    console.print(f"[bold]machine[/] {results['machine']}")
    for name in chosen:
        t0 = time.monotonic()
        console.print(f"running {name}{' (quick)' if quick else ''}…")
        results[name] = suites[name](quick)
        results[name]["seconds"] = round(time.monotonic() - t0, 1)
    for table in tables(results):
        console.print(table)
    stem = f"{'quick' if quick else 'full'}-{suite}"
    path = out / f"{stem}.json"
    path.write_text(json.dumps(results, indent=1, default=str))
    made = plots(results, out)
    console.print(f"results: {path}" + (f"; plots: {', '.join(str(p) for p in made)}" if made else ""))
    if as_json:
        print(json.dumps({k: v for k, v in results.items()}, default=str))
    return 0
