"""The lock's spin against none, in turn: N writers appending to one inbox, and the burst of
1,000 tasks into 4 and 64 idle teammates, each with ``AGENTTEAMS_LOCK_SPIN_US=0`` and with
the default, the order swapped every other round so that a drift in the machine falls on
both alike:

    python -m benchmarks.spin_ab OUT.json [--append-rounds 4] [--burst-rounds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

from benchmarks import contention, tasks
from ipc import lock_settings, locks

SETTINGS = {"off": "0", "spin": ""}  # "": the default


def _use(setting: str) -> None:
    """This process and the ones it starts (the writers fork, the teammates are started
    with its environment) wait as ``setting`` says, from a fresh record of spins."""
    if setting:
        os.environ["AGENTTEAMS_LOCK_SPIN_US"] = setting
    else:
        os.environ.pop("AGENTTEAMS_LOCK_SPIN_US", None)
    lock_settings._spin = None
    locks._spinning = locks._Spinning()


def _rounds(count: int, measure: Any) -> list[dict[str, Any]]:
    runs = []
    for i in range(count):
        for name in SETTINGS if i % 2 == 0 else reversed(SETTINGS):
            _use(SETTINGS[name])
            runs.append({"setting": name, "round": i, **measure(), "load": os.getloadavg()[0]})
            print(name, runs[-1], flush=True)
    _use("")
    return runs


def _appends() -> dict[str, Any]:
    return {
        f"appends_per_s_{n}": contention.appends(n, contention.APPENDS_PER_ROW // n)["appends_per_s"]
        for n in (1, 2, 16, 32)
    }


def _burst() -> dict[str, Any]:
    return {f"work_s_{n}": tasks.burst(n, 1000)["work_s"] for n in (4, 64)}


def _medians(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    keys = [k for k in runs[0] if k.startswith(("appends_per_s_", "work_s_"))]
    return {
        name: {k: statistics.median(r[k] for r in runs if r["setting"] == name) for k in keys}
        for name in SETTINGS
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spin_ab")
    parser.add_argument("out")
    parser.add_argument("--append-rounds", type=int, default=4)
    parser.add_argument("--burst-rounds", type=int, default=6)
    args = parser.parse_args()
    appends = _rounds(args.append_rounds, _appends)
    bursts = _rounds(args.burst_rounds, _burst)
    result = {
        "appends": appends,
        "bursts": bursts,
        "medians": {"appends": _medians(appends), "bursts": _medians(bursts)},
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["medians"], indent=1))


if __name__ == "__main__":
    main()
