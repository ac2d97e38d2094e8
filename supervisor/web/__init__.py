"""The web door: ``agentteams serve``, a live dashboard page and a JSON/SSE API over every
team under a root, each route a view of the table of operations. A door: it imports only
the client side and ``ipc`` (and the MCP door, to mount its endpoint and share its server).

- :mod:`supervisor.web.routes`: the table as HTTP routes, errors as statuses;
- :mod:`supervisor.web.events`: what changes, as Server-Sent Events, from inotify;
- :mod:`supervisor.web.guard`: the token, the Host check, the header for writes;
- :mod:`supervisor.web.app`: the ASGI app; :mod:`supervisor.web.command`: the command.
"""
