"""The lead agent's process is started from one Struct that writes and parses its argv and
environment: what the launcher writes is what the lead reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ipc.errors import InvalidInput
from ipc.launch import LaunchSpec, LeadLaunch

SPEC = LaunchSpec(
    agent_id="team-lead@t",
    agent_name="team-lead",
    team_name="t",
    agent_color="",  # Claude Code's lead has none: an empty flag must still round-trip
    parent_session_id="s",
    model="offline",
    root="/state",
    cwd="/work",
    role="lead",
)


@given(
    prompt=st.text(),
    timeout=st.none() | st.floats(min_value=0.001, max_value=1e6),
    interactive=st.booleans(),
    verbose=st.booleans(),
)
def test_what_the_launcher_writes_the_lead_reads(
    prompt: str, timeout: float | None, interactive: bool, verbose: bool
) -> None:
    launch = LeadLaunch(
        spec=SPEC,
        result_file="/run/lead-result-1.json",
        prompt=prompt,
        timeout=timeout,
        interactive=interactive,
        verbose=verbose,
    )
    assert LeadLaunch.from_argv(launch.to_argv(), launch.to_env()) == launch


def test_the_lead_carries_claude_codes_flags_and_refuses_anything_else() -> None:
    launch = LeadLaunch(spec=SPEC, result_file="/r.json", prompt="go")
    argv, env = launch.to_argv(), launch.to_env()
    assert argv[:4] == ["--agent-id", "team-lead@t", "--agent-name", "team-lead"]
    assert env["AGENTTEAMS_ROLE"] == "lead" and env["AGENTTEAMS_ROOT"] == "/state"
    with pytest.raises(InvalidInput, match="unknown argument '--team'"):
        LeadLaunch.from_argv([*argv, "--team", "t"], env)
    with pytest.raises(InvalidInput, match="role lead, not 'teammate'"):
        LeadLaunch.from_argv(argv, {**env, "AGENTTEAMS_ROLE": "teammate"})
