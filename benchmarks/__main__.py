"""``python -m benchmarks SUITE [--quick] [--out DIR] [--json]``: what `agentteams bench` runs
in a source checkout (shipped code never imports the benchmarks)."""

import argparse
import sys
from pathlib import Path

from benchmarks.run import main
from ipc.errors import AgentTeamsError

parser = argparse.ArgumentParser(prog="python -m benchmarks")
parser.add_argument("suite", nargs="?", default="all")
parser.add_argument("--quick", action="store_true")
parser.add_argument("--out", type=Path, default=None)
parser.add_argument("--json", action="store_true")
parser.add_argument("--max", type=int, default=None, help="the scale suite stops at this many teammates")
args = parser.parse_args()
try:
    sys.exit(main(args.suite, quick=args.quick, out=args.out, as_json=args.json, max_teammates=args.max))
except AgentTeamsError as exc:
    sys.exit(f"agentteams: error: {exc.message}")
