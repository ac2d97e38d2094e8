"""The benchmark code must not rot: its quick mode runs end to end and reports sane figures."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.heavy
def test_bench_quick_runs_every_suite(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "supervisor.cli", "bench", "all", "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads((tmp_path / "quick-all.json").read_text())
    for suite in (
        "latency",
        "exchange",
        "contention",
        "growth",
        "spawn",
        "idle",
        "caching",
        "mcp",
        "hosts",
        "web",
        "cli",
    ):
        assert suite in data and data[suite]["targets"], suite
    cli = data["cli"]
    assert all(r["lost"] == 0 and r["wall"]["p50"] > 0 for r in cli["rows"]) and cli["imports"]["modules"] > 0
    rows = data["latency"]["rows"]
    zmq_rows = [r for r in rows if r["wake"] == "zmq"]
    poll_rows = [r for r in rows if r["wake"] == "poll"]
    assert zmq_rows and poll_rows and all(r["lost"] == 0 for r in zmq_rows + poll_rows)
    assert all(math.isfinite(r["p50"]) and r["p50"] > 0 for r in rows)
    assert all(r["exactly_once"] for r in data["contention"]["appends"] + data["contention"]["claims"])
    bursts = data["tasks"]["bursts"]
    assert all(b["completed"] == b["tasks"] and 0 < b["create_s"] < b["seconds"] for b in bursts)
    assert all(b["seconds"] == pytest.approx(b["create_s"] + b["work_s"]) for b in bursts)
    hosts = data["hosts"]
    assert all(r["lost"] == 0 and math.isfinite(r["p50"]) for r in hosts["rows"])
    assert all(r["exactly_once"] for r in hosts["claims"])
    caching = data["caching"]
    assert 0 < caching["billed_input_cached"] < caching["billed_input_uncached"]
    assert all(r["cached_cache_read"] > 0 for r in caching["rows"][1:])
    assert all(r["shared_billed"] < r["unshared_billed"] for r in caching["fork_rows"])
    assert all(r["completed"] and r["round_trips_per_s"] > 0 for r in data["exchange"]["round_trips"])
    assert all(f["received"] == f["unique"] == f["senders"] * f["each"] for f in data["exchange"]["fan_in"])
    assert {p.name for p in tmp_path.glob("*.png")} == {
        "latency_cdf.png",
        "contention.png",
        "growth.png",
        "caching.png",
        "mcp_cdf.png",
    }
    assert all(r["lost"] == 0 and math.isfinite(r["p50"]) and r["p50"] > 0 for r in data["web"]["rows"])
    mcp = data["mcp"]["rows"]
    assert all(r["lost"] == 0 and math.isfinite(r["p50"]) and r["p50"] > 0 for r in mcp)
