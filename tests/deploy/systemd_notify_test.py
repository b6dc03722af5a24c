#!/usr/bin/env python3
"""copsd speaks systemd's notify protocol: on a NOTIFY_SOCKET the test creates (a unix
datagram socket in a temp dir, as systemd makes for a Type=notify unit) it sends READY=1
once it serves, WATCHDOG=1 at half of WATCHDOG_USEC, and STOPPING=1 when SIGTERM starts
the drain."""

import os
import socket
import time

from harness import Copsd, TempDir, build_dir, check, fail

WATCHDOG_USEC = 200_000


def receive_until(sock, wanted, timeout, server):
    """Datagrams received until one has the line `wanted`; fails after `timeout` seconds."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            message = sock.recv(4096).decode()
        except socket.timeout:
            break
        got.append(message)
        if wanted in message.split("\n"):
            return got
    fail(f"no {wanted} within {timeout}s; received {got}\n{server.log()}")


def main():
    with TempDir("notify") as tmp:
        path = os.path.join(tmp, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": str(WATCHDOG_USEC)}
        copsd = os.path.join(build_dir(), "server", "copsd")
        with Copsd(copsd, tmp, env=env).start(wait_for_port=False) as server:
            got = receive_until(sock, "READY=1", 60, server)
            check(os.path.exists(server.port_file),
                  "READY=1 came before copsd listened (no port file yet)")
            ready = got[-1].split("\n")
            check(any(l.startswith("STATUS=serving on 127.0.0.1:") for l in ready),
                  f"READY=1 without a serving STATUS: {got[-1]!r}")
            # Pings repeat at half the interval: three within a few seconds (the first
            # comes at once; with a wrong period the others would not).
            for _ in range(3):
                receive_until(sock, "WATCHDOG=1", 2, server)

            server.wait_serving()
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")
            receive_until(sock, "STOPPING=1", 5, server)
        sock.close()
    print("PASS")


if __name__ == "__main__":
    main()
