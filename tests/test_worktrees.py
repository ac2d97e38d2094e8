"""A worktree per teammate (``--isolation worktree``): its own checkout of the team's
repository as its cwd, removed when it leaves clean, kept and shown by ``diff`` when not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc import worktrees
from ipc.errors import InvalidInput
from ipc.paths import TeamPaths
from supervisor import Team
from tests.runtime_helpers import cli, git, git_repo, running_team


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "project", {"src/shared.txt": "line 1\n"})


def edit_task(team: Team, owner: str, command: str) -> str:
    """A task for ``owner`` only: owned from its creation, so no idle teammate can take it."""
    task = team.tasks.create(
        f"edit as {owner}", "edit the shared file", metadata={"command": command}, owner=owner
    )
    return task.id


def test_two_teammates_edit_the_same_file_each_in_its_own_worktree(root: Path, repo: Path) -> None:
    with running_team(root) as team:
        for name in ("alice", "bob", "carol"):
            team.spawn(name, prompt="Do your tasks.", cwd=str(repo / "src"), isolation="worktree")
        members = {m.name: m for m in team.config().teammates()}
        paths = TeamPaths(root, team.name)
        for name in ("alice", "bob", "carol"):
            tree = worktrees.find(paths, name)
            assert tree is not None and tree.branch == f"agentteams/{team.name}/{name}"
            assert members[name].cwd == tree.cwd == str(Path(tree.path) / "src")
        assert len({m.cwd for m in members.values()}) == 3
        edit_task(team, "alice", "echo alice >> shared.txt")
        edit_task(team, "bob", "echo bob > shared.txt && echo new > added.txt")
        team.wait_until(lambda t: sum(x.status == "completed" for x in t.tasks.list()) == 2, timeout=60)
        assert (repo / "src" / "shared.txt").read_text() == "line 1\n", "the team's checkout is untouched"
        alice_path = Path(members["alice"].cwd)
        bob_path = Path(members["bob"].cwd)
        assert (alice_path / "shared.txt").read_text() == "line 1\nalice\n"
        assert (bob_path / "shared.txt").read_text() == "bob\n"

        # carol changed nothing: at shutdown her worktree and branch go.
        reply = team.shutdown("carol")
        assert reply.worktree == ""
        assert worktrees.find(paths, "carol") is None
        assert not (paths.worktrees / "carol").exists()
        assert f"agentteams/{team.name}/carol" not in git(repo, "branch", "--list")

        # alice changed the file: her worktree is kept, and said so.
        reply = team.shutdown("alice")
        assert reply.worktree == str(paths.worktrees / "alice")
        assert (alice_path / "shared.txt").exists()
        events = [json.loads(line) for line in paths.events.read_text().splitlines()]
        assert any(e["name"] == "alice" and e.get("worktree") == reply.worktree for e in events)

        shown = team.diff("alice")
        assert shown.changed == ["src/shared.txt"] and shown.commits == 0
        assert "+alice" in shown.diff and "-line 1" not in shown.diff

        out = cli(root, "diff", team.name, "bob").stdout  # bob still runs: his changes so far
        assert "+bob" in out and "-line 1" in out and "src/added.txt" in out and "+new" in out
        data = json.loads(cli(root, "diff", team.name, "bob", "--json").stdout)
        assert sorted(data["changed"]) == ["src/added.txt", "src/shared.txt"]

        failed = cli(root, "diff", team.name, "carol", ok=False)
        assert "no worktree" in failed.stderr
    # The team went down: bob stays a member, his worktree with him.
    assert (paths.worktrees / "bob" / "src" / "shared.txt").read_text() == "bob\n"
    team.delete(force=True)
    assert (paths.worktrees / "alice").exists() and (paths.worktrees / "bob").exists(), "changes are kept"


def test_a_clean_worktree_goes_with_the_team(root: Path, repo: Path) -> None:
    with running_team(root) as team:
        team.spawn("dave", prompt="Wait.", cwd=str(repo), isolation="worktree")
        assert (TeamPaths(root, team.name).worktrees / "dave").is_dir()
    team.delete(force=True)
    assert not (TeamPaths(root, team.name).worktrees / "dave").exists()
    assert "agentteams/" not in git(repo, "branch", "--list")
    assert "dave" not in git(repo, "worktree", "list")


def test_a_worktree_holding_only_files_git_ignores_is_kept(root: Path, tmp_path: Path) -> None:
    # "Clean" by git status, it was removed, and a teammate's output under an ignored path
    # (results, a build, a .env) went with it.
    repo = git_repo(tmp_path / "ignoring", {"src/a.txt": "a\n", ".gitignore": "out/\n"})
    paths = TeamPaths(root, "t")
    tree = worktrees.create(paths, "bob", str(repo))
    (Path(tree.path) / "out").mkdir()
    (Path(tree.path) / "out" / "results.csv").write_text("1,2\n")
    assert worktrees.finish(paths, "bob") == tree
    assert (Path(tree.path) / "out" / "results.csv").read_text() == "1,2\n"
    assert worktrees.changes(tree) == (["out/"], 0)
    # Without them it goes, as before; a tool's cache is not work to keep.
    (Path(tree.path) / "out" / "results.csv").unlink()
    (Path(tree.path) / "out").rmdir()
    (repo / ".git" / "info" / "exclude").write_text("__pycache__/\n")  # shared by its worktrees
    (Path(tree.path) / "src" / "__pycache__").mkdir()
    (Path(tree.path) / "src" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"x")
    assert worktrees.changes(tree) == ([], 0)
    assert worktrees.finish(paths, "bob") is None and not Path(tree.path).exists()


def test_a_worktree_made_by_a_spawn_killed_before_its_record_is_taken_up(root: Path, repo: Path) -> None:
    # A kill between 'git worktree add' and the record refused every later spawn of the
    # name for good: "'…/bob' already exists".
    paths = TeamPaths(root, "t")
    made = worktrees.create(paths, "bob", str(repo))
    worktrees.record_path(paths, "bob").unlink()  # as if killed before it was written
    again = worktrees.create(paths, "bob", str(repo))
    assert (again.path, again.branch, again.base) == (made.path, made.branch, made.base)
    assert worktrees.find(paths, "bob") == again


def test_outside_a_git_repository_it_is_refused_clearly(root: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInput, match="not in one"):
        worktrees.check_repository(str(plain))
    with running_team(root) as team:
        failed = cli(
            root,
            "spawn",
            team.name,
            "erin",
            "--prompt",
            "p",
            "--cwd",
            str(plain),
            "--isolation",
            "worktree",
            "--budget-tokens",
            "500",
            ok=False,
        )
        assert "git repository" in failed.stderr
        assert team.config().teammates() == [], "nothing was written"
        assert not (team.paths.team_dir / "budget.json").exists(), "its budget was left behind"
