#!/usr/bin/env python3
"""The cold backup of docs/operations.md: stop copsd, archive the data directory with tar,
record its checksum; restore elsewhere after verifying the checksum, start copsd on the copy,
and every registered document is found by check, with the key file still owner-only."""

import json
import os
import stat

from harness import Copsd, TempDir, build_dir, check, run, run_ok


def main():
    with TempDir("backup") as tmp:
        copsd = os.path.join(build_dir(), "server", "copsd")
        cops = os.path.join(build_dir(), "client", "cops")
        os.makedirs(os.path.join(tmp, "docs"))
        paths = []
        for i in range(3):
            path = os.path.join(tmp, "docs", f"{i}.txt")
            with open(path, "w") as f:
                f.write(" ".join(f"document {i} sentence {j} says something of its own."
                                 for j in range(40)))
            paths.append(path)

        ids = {}
        with Copsd(copsd, tmp).start() as server:
            for path in paths:
                r = run_ok([cops, "--server", server.address, "--json", "register", path])
                ids[path] = json.loads(r.stdout)["doc_id"]
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")

        # Back up: the whole data directory, while copsd is stopped.
        archive = os.path.join(tmp, "copsd-backup.tar.gz")
        run_ok(["tar", "--create", "--gzip", "--file", archive, "--directory", tmp, "data"])
        checksum = run_ok(["sha256sum", "copsd-backup.tar.gz"], cwd=tmp).stdout
        with open(archive + ".sha256", "w") as f:
            f.write(checksum)

        # Restore somewhere else.
        restore = os.path.join(tmp, "restore")
        os.makedirs(restore)
        run_ok(["sha256sum", "--check", "copsd-backup.tar.gz.sha256"], cwd=tmp)
        run_ok(["tar", "--extract", "--gzip", "--file", archive, "--directory", restore,
                "--same-permissions"])
        data = os.path.join(restore, "data")
        key_mode = stat.S_IMODE(os.stat(os.path.join(data, "hash.key")).st_mode)
        check(key_mode == 0o600, f"restored hash.key has mode {key_mode:o}")

        os.makedirs(os.path.join(tmp, "second"))
        with Copsd(copsd, os.path.join(tmp, "second"), data_dir=data).start() as server:
            for path, doc_id in ids.items():
                r = run([cops, "--server", server.address, "--json", "check", path])
                report = json.loads(r.stdout)
                check(report["violation"] and report["matches"][0]["doc_id"] == doc_id,
                      f"{path} (document {doc_id}) not found in the restored copy: {r.stdout}")
            stats = json.loads(run_ok([cops, "--server", server.address, "--json",
                                       "stats"]).stdout)
            check(stats["documents"] == len(ids), f"restored copy holds {stats['documents']}")
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")
    print("PASS")


if __name__ == "__main__":
    main()
