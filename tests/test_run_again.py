"""`agentteams run` as a user runs it twice, from a checkout: this run's results, never an
earlier one's; a directory of its own; exit codes that say what happened."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.runtime_helpers import cli

EXAMPLE = Path(__file__).parent.parent / "examples" / "pipeline.toml"


def test_a_scenario_run_again_is_refused_with_the_way_out_and_fresh_runs_it(tmp_path: Path) -> None:
    state, caller = tmp_path / "state", tmp_path / "checkout"
    caller.mkdir()
    scenario = caller / "pipeline.toml"
    shutil.copy(EXAMPLE, scenario)
    first = json.loads(cli(state, "run", str(scenario), "--json", cwd=caller).stdout)
    workdir = Path(first["cwd"])
    assert workdir == state / "work" / "word-count" and (workdir / "total.txt").read_text() == "12000\n"
    assert sorted(p.name for p in caller.iterdir()) == [
        "pipeline.toml"
    ]  # the caller's directory is left alone
    (workdir / "total.txt").unlink()
    again = cli(state, "run", str(scenario), ok=False, cwd=caller)
    assert again.returncode == 1 and "already ran to completion" in again.stderr and "--fresh" in again.stderr
    assert not (workdir / "total.txt").exists()  # nothing ran, and nothing said it did
    fresh = cli(state, "run", str(scenario), "--fresh", cwd=caller)
    assert "5/5 tasks completed" in fresh.stdout and str(workdir) in fresh.stdout
    assert (workdir / "total.txt").read_text() == "12000\n"


def test_a_run_that_stopped_is_continued_and_says_what_was_done_before(root: Path) -> None:
    scenario = root / "s.toml"
    scenario.write_text(
        'timeout = 60\n[team]\nname = "c"\n[[teammates]]\nname = "w"\n'
        '[[tasks]]\nkey = "a"\nsubject = "A"\ncommand = "true"\n'
        '[[tasks]]\nkey = "b"\nsubject = "B"\ncommand = "exit 1"\nblocked_by = ["a"]\n'
    )
    failed = cli(root, "run", str(scenario), "--json", ok=None)
    assert failed.returncode == 3, failed.stderr
    report = json.loads(failed.stdout)
    assert report["tasks_failed"] == ["2"] and "task #2 (B) failed: Exit code 1" in report["error"]
    cli(root, "task", "update", "c", "2", "--command", "true", "--status", "pending")
    again = json.loads(cli(root, "run", str(scenario), "--json").stdout)
    assert again["tasks_completed"] == 2 and again["completed_before"] == 1


def test_a_run_out_of_time_exits_4(root: Path) -> None:
    scenario = root / "slow.toml"
    scenario.write_text(
        'timeout = 1\n[team]\nname = "slow"\n[[teammates]]\nname = "w"\n'
        '[[tasks]]\nkey = "a"\nsubject = "Wait"\ncommand = "sleep 30"\n'
    )
    out = cli(root, "run", str(scenario), ok=None)
    assert out.returncode == 4 and "did not finish within 1s" in out.stderr, out.stderr
