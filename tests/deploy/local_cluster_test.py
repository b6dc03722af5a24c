#!/usr/bin/env python3
"""scripts/local-cluster.sh as docs/scale-out.md, "A cluster on one machine", uses it:

`up DIR` starts three nats-servers in a JetStream cluster, 2 partitions x 2 index replicas
and a router, printing the router's address; a document registered through the router is
found by a check through it, complete, and held by both replicas of one partition that
`status DIR` lists in the cluster map; a replica killed with SIGKILL and started again by
`restart DIR NAME` is live in the map again; `down DIR` stops every member. The setup is the
secure default: the router refuses a call without its admin key (DIR/admin.key, 0600), a
replica one without a client certificate of DIR/secrets, and nats.conf gives every copsd its
own NATS user.
"""

import json
import os
import shutil
import signal
import time

from harness import TempDir, build_dir, check, run, run_ok, skip, source_dir

SCRIPT = os.path.join(source_dir(), "scripts", "local-cluster.sh")
COPS = os.path.join(build_dir(), "client", "cops")


def map_lines(cluster_dir):
    """The cluster map lines of `status`: {node: (address, applied, state)}."""
    out = run_ok([SCRIPT, "status", cluster_dir]).stdout
    members = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 6 and "/" in fields[2]:
            members[fields[0]] = (fields[1], int(fields[3]), fields[5])
    return members, out


def eventually(probe, timeout=60):
    """Polls probe() (returning (ok, detail)) until ok or `timeout` s: the second replica of a
    partition applies a registration from the log after the call returns, and a loaded host
    can take seconds to."""
    deadline = time.monotonic() + timeout
    while True:
        ok, detail = probe()
        if ok or time.monotonic() > deadline:
            return ok, detail
        time.sleep(0.2)


def main():
    if shutil.which("nats-server") is None and not os.path.exists("/usr/sbin/nats-server"):
        skip("nats-server is not installed (scripts/install-deps.sh)")
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin")
    with TempDir("local_cluster") as tmp:
        cluster = os.path.join(tmp, "cluster")
        try:
            up = run_ok([SCRIPT, "up", cluster], env=env)
            address = up.stdout.strip().splitlines()[-1]
            check(address.startswith("127.0.0.1:"), f"up did not end with HOST:PORT:\n{up.stdout}")
            for member in ["nats-1", "nats-2", "nats-3", "index-p0r1", "index-p0r2",
                           "index-p1r1", "index-p1r2", "router"]:
                check(os.path.exists(os.path.join(cluster, f"{member}.pid")), f"no {member}.pid")

            doc = os.path.join(tmp, "doc.txt")
            with open(doc, "w") as f:
                f.write(" ".join(f"sentence {j} of the local cluster test says its own thing."
                                 for j in range(60)))
            key_file = os.path.join(cluster, "admin.key")
            check(os.stat(key_file).st_mode & 0o777 == 0o600, "admin.key is not 0600")
            with open(key_file) as f:
                admin = ["--api-key", f.read().strip()]
            r = run([COPS, "--server", address, "--json", "register", doc])
            check(r.returncode != 0, "the router registered without an API key")
            doc_id = json.loads(run_ok([COPS, "--server", address, "--json"] + admin +
                                       ["register", doc]).stdout)["doc_id"]
            r = run([COPS, "--server", address, "--json"] + admin + ["check", doc])
            check(r.returncode == 1, f"check did not report the violation (exit {r.returncode})")
            checked = json.loads(r.stdout)
            check(not checked.get("partial") and checked["matches"][0]["doc_id"] == doc_id,
                  f"the router's check is partial or misses the document: {checked}")

            def four_live():
                members, out = map_lines(cluster)
                return (sorted(members) == ["index-p0r1", "index-p0r2", "index-p1r1", "index-p1r2"]
                        and all(m[2] == "live" for m in members.values())), (members, out)
            ok, (members, out) = eventually(four_live)
            check(ok, f"status does not list four live replicas:\n{out}")
            secrets = os.path.join(cluster, "secrets")
            tls = ["--tls-ca", os.path.join(secrets, "ca.pem"),
                   "--tls-cert", os.path.join(secrets, "client.pem"),
                   "--tls-key", os.path.join(secrets, "client.key")]

            def replica_key(name):
                with open(os.path.join(cluster, name, "data", "admin.key")) as f:
                    return ["--api-key", f.read().strip()]
            def both_hold():
                holders = [name for name, (replica, _, _) in members.items()
                           if run([COPS, "--server", replica] + tls + replica_key(name) +
                                  ["get", str(doc_id)]).returncode == 0]
                return len(holders) == 2 and holders[0][:8] == holders[1][:8], holders
            ok, holders = eventually(both_hold)
            check(ok, f"the document is not on both replicas of one partition: {holders}")

            with open(os.path.join(cluster, "index-p0r1.pid")) as f:
                os.kill(int(f.read()), signal.SIGKILL)
            run_ok([SCRIPT, "restart", cluster, "index-p0r1"], env=env)

            def restarted_live():
                members, out = map_lines(cluster)
                return members.get("index-p0r1", ("", 0, ""))[2] == "live", out
            ok, out = eventually(restarted_live)
            check(ok, f"restarted index-p0r1 is not live in the map:\n{out}")
        finally:
            run([SCRIPT, "down", cluster], env=env)
        for name in os.listdir(cluster):
            check(not name.endswith(".pid"), f"down left {name}")
    print("PASS")


if __name__ == "__main__":
    main()
