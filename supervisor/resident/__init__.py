"""The resident door: a program the team's supervisor starts on the first connection to its
door socket, which keeps the team open with everything imported and runs what a command-line
process hands it (``send``, ``task create``) through the table of operations. A door: it
imports only the client side and ``ipc``. See :mod:`supervisor.resident.server`."""
