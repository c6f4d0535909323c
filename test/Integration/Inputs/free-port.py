"""Prints a TCP port that nobody listens at now (for MASTER_PORT in tests)."""
import socket

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
