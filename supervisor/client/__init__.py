"""The client side: what runs in the caller's process (the Python API's ``Team``, starting a
supervisor, a lead agent, the process tree). It meets the daemon only over the control
socket and :mod:`ipc`."""
