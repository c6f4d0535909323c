"""impostor-rank.py PORT: what anyone who reaches a launch's MASTER_PORT could try:
say "rank 1 of 2" to rank 0 at 127.0.0.1:PORT, answer its challenge with a proof
it cannot make (it lacks the job's secret), and see whether rank 0 lets it in (a
table of addresses comes back) or closes the connection. Then whether rank 0 also
listens on another address of this host (127.0.0.2). Prints one line for each."""
import os
import socket
import struct
import sys
import time

port = int(sys.argv[1])
deadline = time.monotonic() + 30
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        break
    except OSError:
        if time.monotonic() > deadline:
            print("rank 0 never listened")
            sys.exit(1)
        time.sleep(0.05)

# TcpLinks.cpp's Hello: magic, rank, world size, port, the initiator's nonce.
s.sendall(b"zrunrdv1" + struct.pack("<iiI", 1, 2, 40000) + os.urandom(32))
challenge = b""
while len(challenge) < 72:
    part = s.recv(72 - len(challenge))
    if not part:
        break
    challenge += part
s.sendall(os.urandom(32))  # the proof: it would need ZERO_RUN_SECRET
try:
    answer = s.recv(64)
except OSError:
    answer = b""
print("impostor refused" if not answer else "impostor LET IN")

try:
    socket.create_connection(("127.0.0.2", port), timeout=2).close()
    print("rank 0 also listens on 127.0.0.2")
except OSError:
    print("rank 0 listens at MASTER_ADDR only")
