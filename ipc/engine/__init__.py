"""A team on NATS JetStream: the engine-backed config, task list, inboxes and doorbells
behind the same seam as the files (:mod:`ipc.team_state` chooses per team).

Importing this package costs nothing: the NATS client is imported by the modules that talk
to the server, the first time a process uses an engine team.
"""
