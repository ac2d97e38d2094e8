"""The agentteams benchmark suite: `agentteams bench` / `make bench`."""
