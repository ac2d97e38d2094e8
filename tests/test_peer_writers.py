"""Mixed writers on one inbox: agentteams beside each program that writes the same files, each
in its own processes with its own lock protocol, in a Claude Code root:

- claude-code-teams-mcp: a filelock on ``inboxes/.lock``, read, append, rewrite in place
  (and only the fields it knows);
- agent-team-mail: flock on ``inboxes/{agent}.lock``, read, append, temp file and rename
  (keeping unknown fields, adding ``message_id``);
- Claude Code 2.1.330: proper-lockfile's ``mkdir {inbox}.lock`` with its retries (10, 5-100
  ms), read, append, temp file and rename, run by node with the real proper-lockfile (a send
  whose lock times out tried again, at most twice).

4 + 4 processes × 100 messages each time: nothing may be lost or doubled.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ipc.config import TeamConfigStore
from ipc.mailbox import Mailbox
from tests.claude_code import proper_lockfile

PER_WRITER = 100
WRITERS = 4

OURS = """
import sys
from ipc.mailbox import Mailbox
root, who = sys.argv[1], sys.argv[2]
box = Mailbox(root, "t", "box")
for i in range(int(sys.argv[3])):
    box.append(sender=who, text=f"{who}-{i}", summary="s")
"""

MCP = """
import json, sys
from datetime import UTC, datetime
from pathlib import Path
from filelock import FileLock
root, who = Path(sys.argv[1]), sys.argv[2]
path = root / "teams" / "t" / "inboxes" / "box.json"
known = ("from", "text", "timestamp", "read", "summary", "color")  # its pydantic model
for i in range(int(sys.argv[3])):
    with FileLock(str(path.parent / ".lock")):
        entries = json.loads(path.read_text())
        entries = [{k: v for k, v in e.items() if k in known} for e in entries]
        entries.append({"from": who, "text": f"{who}-{i}", "timestamp": datetime.now(UTC).isoformat(), "read": False})
        path.write_text(json.dumps(entries))
"""

ATM = """
import fcntl, json, os, sys, uuid
from datetime import UTC, datetime
from pathlib import Path
root, who = Path(sys.argv[1]), sys.argv[2]
path = root / "teams" / "t" / "inboxes" / "box.json"
for i in range(int(sys.argv[3])):
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = json.loads(path.read_text())
        entries.append({"from": who, "text": f"{who}-{i}", "timestamp": datetime.now(UTC).isoformat(),
                        "read": False, "message_id": str(uuid.uuid4()), "atmState": {"acked": False}})
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(entries, indent=2))
        os.rename(tmp, path)
"""

CLAUDE = """
const lockfile = require(process.argv[2]);
const fs = require("fs");
const crypto = require("crypto");
const [root, who, count] = [process.argv[3], process.argv[4], Number(process.argv[5])];
const path = `${root}/teams/t/inboxes/box.json`;
(async () => {
  let failed = 0;
  for (let i = 0; i < count; i++) {
    let release;
    // Claude Code 2.1.330's inbox lock options. A lock not got within them is an error to the
    // sender (nothing was written), which a sender may try again: up to 3 tries here, since on
    // a loaded machine 8 writers can hold the lock past the ~0.7 s one try waits.
    for (let tries = 0; release === undefined && tries < 3; tries++) {
      try {
        release = await lockfile.lock(path, {lockfilePath: `${path}.lock`, retries: {retries: 10, minTimeout: 5, maxTimeout: 100}});
      } catch (err) { if (tries === 2) failed++; }
    }
    if (release === undefined) continue;
    const entries = JSON.parse(fs.readFileSync(path, "utf8"));
    entries.push({from: who, text: `${who}-${i}`, timestamp: new Date().toISOString(), read: false,
                  msgV: 1, msg_id: crypto.randomUUID(), type: "message"});
    fs.writeFileSync(`${path}.tmp-${process.pid}`, JSON.stringify(entries, null, 2));
    fs.renameSync(`${path}.tmp-${process.pid}`, path);
    await release();
  }
  if (failed) { console.error(`${failed} lock failures`); process.exit(3); }
})();
"""


def claude_root(tmp_path: Path) -> Path:
    root = tmp_path / "claude-home"
    (root / "projects").mkdir(parents=True)  # Claude Code's own files: this is its root
    TeamConfigStore(root, "t").create("mixed writers")
    TeamConfigStore(root, "t").add_member("box")
    Mailbox(root, "t", "box").create()
    return root


def run_writers(root: Path, peer: list[str], peer_name: str) -> None:
    procs = []
    for k in range(WRITERS):
        procs.append(subprocess.Popen([sys.executable, "-c", OURS, str(root), f"ours{k}", str(PER_WRITER)]))
        procs.append(subprocess.Popen([*peer, str(root), f"{peer_name}{k}", str(PER_WRITER)]))
    failures = [p.wait(timeout=180) for p in procs]
    assert failures == [0] * len(procs), failures


def assert_all_there_once(root: Path, peer_name: str) -> list[dict[str, object]]:
    entries: list[dict[str, object]] = json.loads((root / "teams" / "t" / "inboxes" / "box.json").read_text())
    texts = sorted(str(e["text"]) for e in entries)
    expected = sorted(
        f"{who}{k}-{i}" for who in ("ours", peer_name) for k in range(WRITERS) for i in range(PER_WRITER)
    )
    lost = set(expected) - set(texts)
    assert not lost, f"{len(lost)} of {len(expected)} lost, e.g. {sorted(lost)[:3]}"
    assert texts == expected, "a message was written twice"
    assert not (root / "teams" / "t" / "inboxes" / "box.json.lock").exists()
    return entries


def test_beside_claude_code_teams_mcp_nothing_is_lost(tmp_path: Path) -> None:
    root = claude_root(tmp_path)
    run_writers(root, [sys.executable, "-c", MCP], "mcp")
    assert_all_there_once(root, "mcp")


def test_beside_agent_team_mail_nothing_is_lost_and_its_fields_are_kept(tmp_path: Path) -> None:
    root = claude_root(tmp_path)
    run_writers(root, [sys.executable, "-c", ATM], "atm")
    entries = assert_all_there_once(root, "atm")
    theirs = [e for e in entries if str(e["from"]).startswith("atm")]
    assert all(
        "message_id" in e and e["atmState"] == {"acked": False} for e in theirs
    )  # our writes keep them


def test_beside_claude_codes_proper_lockfile_nothing_is_lost(tmp_path: Path) -> None:
    library = proper_lockfile()
    root = claude_root(tmp_path)
    script = tmp_path / "writer.js"
    script.write_text(textwrap.dedent(CLAUDE))
    run_writers(root, ["node", str(script), str(library)], "claude")
    entries = assert_all_there_once(root, "claude")
    assert all(e.get("msgV") == 1 for e in entries if str(e["from"]).startswith("claude"))


@pytest.mark.parametrize("peer", ["mcp", "atm"])
def test_a_peers_rewrite_is_read_back_by_agentteams(tmp_path: Path, peer: str) -> None:
    """The compact (MCP) and pretty (ATM) files the peers leave are valid inboxes to us."""
    root = claude_root(tmp_path)
    program = MCP if peer == "mcp" else ATM
    subprocess.run([sys.executable, "-c", program, str(root), peer, "3"], check=True)
    box = Mailbox(root, "t", "box")
    box.append(sender="ours", text="after the peer", summary="s")
    assert [m.text for m in box.read()] == [f"{peer}-0", f"{peer}-1", f"{peer}-2", "after the peer"]
