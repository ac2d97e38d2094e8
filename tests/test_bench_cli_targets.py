"""The CLI benchmark's targets come from one row function for both paths: the committed
results file, computed when each path had its own rows, is reproduced from its rows."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import cli

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "floor" / "full-cli.json"


def test_the_targets_of_a_committed_run_are_its_rows_measured_against_the_target() -> None:
    data = json.loads(RESULTS.read_text())["cli"]
    assert [r["path"] for r in data["rows"]] == ["full", "full", "resident door", "resident door"]
    assert cli.targets(data["rows"]) == data["targets"]
    slow = [{**row, "wall": {**row["wall"], "p50": cli.TARGET_MS + 1}} for row in data["rows"]]
    met = [t["met"] for t in cli.targets(slow)]  # the walls over it, create → claimed as it was
    assert met == [False, False, data["targets"][2]["met"], False, False, data["targets"][5]["met"]]
