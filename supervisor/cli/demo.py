"""`agentteams demo`: the offline lead is handed a DAG of real shell tasks as its goal
(generate a data set, split it, count and checksum the parts in parallel, merge a report,
verify it); it creates the tasks, spawns offline teammates, follows their reports, shuts
them down and deletes the team, while a live view shows the team; then a summary."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.live import Live

from ipc import trace
from ipc.errors import AgentTeamsError
from supervisor.cli import scenario as sc
from supervisor.cli.ps_view import close_branches, mib
from supervisor.cli.view import console as make_console
from supervisor.cli.view import render, snapshot
from supervisor.client.lead_runner import LeadRun
from supervisor.client.ps import TeamTree, describe
from supervisor.client.team import Team

TEAM = "demo"
ROWS = 200_000


def pipeline(teammates: int, tasks: int) -> sc.Scenario:
    """Commands with paths relative to the team's working directory: one that named it would
    name ``.agentteams`` under the default root, which the teammates' guard on the team's
    state refuses in a Bash command."""
    parts = max(1, (tasks - 4) // 2)
    specs = [
        sc.TaskSpec(
            key="generate",
            subject="Generate the data set",
            description=f"{ROWS} rows of id,code,value",
            command=f"awk 'BEGIN{{srand(7); for(i=1;i<={ROWS};i++) printf \"%d,%06d,%d\\n\", i, int(rand()*999999), int(rand()*1000)}}' > data.csv && wc -l < data.csv",
        ),
        sc.TaskSpec(
            key="split",
            subject=f"Split it into {parts} parts",
            blocked_by=["generate"],
            command=f"split -n l/{parts} -d -a 2 data.csv part- && ls part-* | wc -l",
        ),
    ]
    for i in range(parts):
        specs.append(
            sc.TaskSpec(
                key=f"count-{i}",
                subject=f"Count rows and sum values of part {i:02d}",
                blocked_by=["split"],
                command=f"awk -F, '{{n++; s+=$3}} END {{printf \"%s %d %d\\n\", FILENAME, n, s}}' part-{i:02d} > count-{i:02d}.txt && cat count-{i:02d}.txt",
            )
        )
        specs.append(
            sc.TaskSpec(
                key=f"checksum-{i}",
                subject=f"Checksum part {i:02d}",
                blocked_by=["split"],
                command=f"sha256sum part-{i:02d} > part-{i:02d}.sha256 && cut -c1-16 part-{i:02d}.sha256",
            )
        )
    merged_from = [f"count-{i}" for i in range(parts)] + [f"checksum-{i}" for i in range(parts)]
    specs.append(
        sc.TaskSpec(
            key="merge",
            subject="Merge the parts into report.md",
            blocked_by=merged_from,
            command=(
                "{ echo '# agentteams demo report'; echo; echo '| part | rows | sum of values |'; echo '|---|---|---|'; "
                'cat count-*.txt | awk \'{printf "| %s | %d | %d |\\n", $1, $2, $3; r+=$2; s+=$3} END {printf "| total | %d | %d |\\n", r, s}\'; '
                "echo; echo '## sha256'; echo; cat part-*.sha256 | sed 's/^/    /'; } > report.md && grep total report.md"
            ),
        )
    )
    specs.append(
        sc.TaskSpec(
            key="verify",
            subject="Verify checksums and totals",
            blocked_by=["merge"],
            command=(
                "sha256sum -c --quiet part-*.sha256 && wc -l < data.csv > rows.txt && "
                "awk -F'|' 'NR==FNR {rows=$1; next} / total / {gsub(/ /, \"\", $3); total=$3} "
                'END {if (total != rows) exit 1; print "verified: " rows " rows, every checksum OK"}\' rows.txt report.md'
            ),
        )
    )
    return sc.Scenario(
        team=sc.TeamSpec(name=TEAM, description="the agentteams demo pipeline"),
        teammates=[
            sc.TeammateSpec(name="worker", count=teammates, prompt="Work through the team's task list.")
        ],
        tasks=specs,
    )


def plan_text(scenario: sc.Scenario) -> str:
    """The pipeline as the numbered steps the offline lead reads (``N. subject [after …]: `cmd```)."""
    numbers = {spec.key: i for i, spec in enumerate(scenario.tasks, 1)}
    lines = [f"Teammates: {scenario.teammates[0].count}"]
    for i, spec in enumerate(scenario.tasks, 1):
        after = f" [after {', '.join(str(numbers[k]) for k in spec.blocked_by)}]" if spec.blocked_by else ""
        lines.append(f"{i}. {spec.subject}{after}: `{spec.command}`")
    return "\n".join(lines) + "\n"


def _tree_size(tree: TeamTree) -> tuple[int, int]:
    """Teammates running, then their tools: a sample with every teammate up is the peak even
    when an earlier one with fewer teammates caught more tool processes."""
    running = [m for m in tree.teammates if m.pid]
    return len(running), sum(len(m.children) for m in running)


def run_demo(
    root: Path,
    teammates: int = 4,
    tasks: int = 20,
    as_json: bool = False,
    wake: str = "zmq",
    on_up: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Hand the pipeline to the offline lead as a goal and watch the team do it.
    ``on_up``: called once the team is up, before the lead starts; with it the team stays
    afterwards (a dashboard shows how it ended)."""
    console = make_console(stderr=as_json)
    existing = Team(TEAM, root)
    if existing.store.exists():
        existing.delete(force=True)
    workdir = root / "demo-output"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    scenario = pipeline(teammates, tasks)
    (workdir / "plan.md").write_text(plan_text(scenario))
    # Traces outlive the team (the lead deletes it): every message of the run, timed live.
    traces = root / "demo-trace.jsonl"
    traces.unlink(missing_ok=True)
    os.environ["AGENTTEAMS_TRACE"] = str(traces)
    team = Team.create(TEAM, root=root, description=scenario.team.description, cwd=str(workdir))
    team.up(wake=wake)
    if on_up is not None:
        on_up()
    peak = TeamTree(team=TEAM, root=str(root))
    seen_pids: set[int] = {team.supervisor_pid() or 0}
    goal = "Run the demo data pipeline in plan.md, then shut the team down.\nPlan file: plan.md"
    lead = LeadRun(
        team,
        goal,
        model="offline",
        timeout=scenario.timeout,
        interactive=False,
        verbose=False,
        owns_team=on_up is None,
        keep_reason="the demo made it and keeps it for the dashboard",
    )
    seen_pids.add(lead.pid)
    started = time.monotonic()

    def sample() -> None:
        nonlocal peak
        try:
            tree = team.ps()
        except AgentTeamsError:
            return  # the lead has deleted the team
        seen_pids.update(m.pid for m in tree.teammates if m.pid)
        seen_pids.update(c.pid for m in tree.teammates for c in m.children)
        if _tree_size(tree) >= _tree_size(peak):
            peak = tree

    shown = -1

    def progress(done: int) -> None:
        """A line when more tasks are done: never back to 0 once the lead has deleted the team."""
        nonlocal shown
        if done > shown and not as_json and not sys.stdout.isatty():
            console.print(f"[{done:>2}/{len(scenario.tasks)}] tasks completed")
            shown = done

    try:
        if not as_json and sys.stdout.isatty():
            first = render(snapshot(team), width=console.width, height=console.height - 1)
            with Live(first, console=console, refresh_per_second=4) as live:
                while lead.running():
                    sample()
                    with contextlib.suppress(AgentTeamsError):
                        live.update(render(snapshot(team), width=console.width, height=console.height - 1))
                    time.sleep(0.25)
        else:
            while lead.running():
                sample()
                progress(sum(1 for t in _tasks(team) if t.status == "completed"))
                time.sleep(0.1)
    finally:
        result = lead.wait()  # an interrupt is passed on to the lead
        team.down()  # nothing to do if the lead deleted the team
    progress(sum(1 for t in result.tasks if t["status"] == "completed"))  # the team may be gone by now
    seconds = time.monotonic() - started
    spans = [s for s in trace.spans(team.paths) if s.sent and s.taken]
    os.environ.pop("AGENTTEAMS_TRACE", None)
    latency = trace.percentiles([s.latency_ms for s in spans])
    left = sorted(pid for pid in seen_pids if pid and describe(pid) is not None)
    summary = {
        "team": TEAM,
        "root": str(root),
        "output": str(workdir),
        "report": str(workdir / "report.md"),
        "teammates": teammates,
        "tasks_total": len(result.tasks),
        "tasks_completed": sum(1 for t in result.tasks if t["status"] == "completed"),
        "tasks_failed": [t["id"] for t in result.tasks if t["status"] != "completed"],
        "lead": {"stopped_by": result.stopped_by, "turns": result.turns, "error": result.error},
        "answer": result.answer,
        "messages": result.messages,
        "seconds": round(seconds, 2),
        "wake": wake,
        "send_to_turn_ms": {k: round(v, 3) for k, v in latency.items()},
        "peak_process_tree": msgspec.to_builtins(peak),
        "left_running": left,
    }
    if not as_json:
        print_summary(console, summary, workdir)
    return summary


def _tasks(team: Team) -> list[Any]:
    try:
        return team.tasks.list()
    except AgentTeamsError:
        return []


def print_summary(console: Console, s: dict[str, Any], workdir: Path) -> None:
    lat = s["send_to_turn_ms"]
    console.print()
    console.print(f"[bold]the lead said[/]\n{s['answer']}")
    console.print()
    console.print(
        f"[bold]tasks[/]      {s['tasks_completed']}/{s['tasks_total']} completed in {s['seconds']} s by {s['teammates']} teammates"
    )
    console.print(
        f"[bold]lead[/]       {s['lead']['turns']} turns on {s['messages']} messages; {s['lead']['stopped_by']}"
    )
    console.print(
        f"[bold]send→turn[/]  p50 {lat['p50']:.3f} ms · p90 {lat['p90']:.3f} ms · p99 {lat['p99']:.3f} ms · max {lat['max']:.3f} ms over the run's {int(lat['n'])} messages (wake={s['wake']}; Claude Code's 500 ms poll waits 250 ms on average)"
    )
    console.print("[bold]process tree at its peak[/]")
    tree = s["peak_process_tree"]
    sup = tree.get("supervisor") or {}
    rows = [f"  supervisor {sup.get('pid')}  rss {mib(sup.get('rss'))} MiB"]
    if tree.get("lead"):
        rows.append(f"  ├─ lead agent {tree['lead']['pid']}")
    if tree.get("forkserver"):
        rows.append(f"  ├─ fork server {tree['forkserver']['pid']}")
    for mate in tree["teammates"]:
        proc = mate.get("process") or {}
        task = mate.get("task") or {}
        rows.append(
            f"  ├─ {mate['name']} {mate['pid']} {mate['state']}  uss {mib(proc.get('uss'))} MiB  {('#' + task['id'] + ' ' + task['subject']) if task else ''}"
        )
        for child in mate["children"]:
            rows.append(f"  │   {'    ' * (child['depth'] - 1)}└─ {child['pid']} {child['cmdline'][:70]}")
    for row in close_branches(rows):  # as ps draws it; a task's words are not markup
        console.print(row, markup=False, highlight=False)
    report = workdir / "report.md"
    if report.exists():
        console.print(f"[bold]report[/]     {report}")
    console.print(f"[bold]left running[/] {s['left_running'] or 'nothing'}")
