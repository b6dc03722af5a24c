#!/usr/bin/env python3
"""The backups of docs/operations.md, "Backup and restore":

- online: `cops admin snapshot` while copsd serves, the snapshot archived with tar and its
  checksum recorded, restored into a fresh directory after verifying the checksum;
- cold: stop copsd, archive the data directory with tar, record its checksum, restore
  elsewhere after verifying the checksum.

Each time copsd starts on the restored copy and every registered document is found by check
under its id, with the key file still owner-only.
"""

import hashlib
import json
import os
import stat

from harness import Copsd, TempDir, build_dir, check, run, run_ok

COPSD = os.path.join(build_dir(), "server", "copsd")
COPS = os.path.join(build_dir(), "client", "cops")


def write_documents(tmp):
    """Three unrelated texts: what a backup must keep is each document, not a detection edge
    case (texts that differ by one word in eight are near-copies of each other)."""
    os.makedirs(os.path.join(tmp, "docs"))
    paths = []
    for i in range(3):
        path = os.path.join(tmp, "docs", f"{i}.txt")
        words = [hashlib.sha256(f"{i}-{j}".encode()).hexdigest()[:8] for j in range(320)]
        with open(path, "w") as f:
            f.write(" ".join(" ".join(words[j:j + 8]) + "." for j in range(0, 320, 8)))
        paths.append(path)
    return paths


def register(server, paths):
    ids = {}
    for path in paths:
        r = run_ok([COPS, "--server", server.address, "--json", "register", path])
        ids[path] = json.loads(r.stdout)["doc_id"]
    return ids


def check_restored(tmp, workdir, data, ids, key_file="hash.key"):
    """Starts copsd on `data`: every document of `ids` is found under its id, nothing else."""
    key_mode = stat.S_IMODE(os.stat(os.path.join(data, key_file)).st_mode)
    check(key_mode == 0o600, f"restored {key_file} has mode {key_mode:o}")
    os.makedirs(os.path.join(tmp, workdir))
    with Copsd(COPSD, os.path.join(tmp, workdir), data_dir=data).start() as server:
        for path, doc_id in ids.items():
            r = run([COPS, "--server", server.address, "--json", "check", path])
            report = json.loads(r.stdout)
            check(report["violation"] and report["matches"][0]["doc_id"] == doc_id,
                  f"{path} (document {doc_id}) not found in the restored copy: {r.stdout}")
        stats = json.loads(run_ok([COPS, "--server", server.address, "--json",
                                   "stats"]).stdout)
        check(stats["documents"] == len(ids), f"restored copy holds {stats['documents']}")
        check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")


def online_snapshot():
    with TempDir("snapshot") as tmp:
        os.umask(0o077)
        paths = write_documents(tmp)
        with Copsd(COPSD, tmp).start() as server:
            ids = register(server, paths[:2])
            r = run_ok([COPS, "--server", server.address, "admin", "snapshot", "nightly"])
            snapshots = os.path.join(tmp, "data", "snapshots")
            check(r.stdout.strip() == os.path.join(snapshots, "nightly"), r.stdout)
            register(server, paths[2:])  # after the snapshot: not in it
            # Archived while copsd keeps serving, then deleted from the server.
            run_ok(["tar", "--create", "--gzip", "--file", "copsd-nightly.tar.gz",
                    "--directory", snapshots, "nightly"], cwd=tmp)
            checksum = run_ok(["sha256sum", "copsd-nightly.tar.gz"], cwd=tmp).stdout
            with open(os.path.join(tmp, "copsd-nightly.tar.gz.sha256"), "w") as f:
                f.write(checksum)
            run_ok(["rm", "-rf", os.path.join(snapshots, "nightly")])
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")
        mode = stat.S_IMODE(os.stat(os.path.join(tmp, "copsd-nightly.tar.gz")).st_mode)
        check(mode == 0o600, f"the archive has mode {mode:o} under umask 077")

        # Restored into a fresh directory.
        restored = os.path.join(tmp, "restored", "copsd")
        run_ok(["sha256sum", "--check", "copsd-nightly.tar.gz.sha256"], cwd=tmp)
        run_ok(["mkdir", "--parents", "--mode", "0700", restored])
        run_ok(["tar", "--extract", "--gzip", "--file", "copsd-nightly.tar.gz", "--directory",
                restored, "--strip-components", "1", "--same-permissions"], cwd=tmp)
        check_restored(tmp, "second", restored, ids)


def cold_backup():
    with TempDir("backup") as tmp:
        paths = write_documents(tmp)
        with Copsd(COPSD, tmp).start() as server:
            ids = register(server, paths)
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
        check_restored(tmp, "second", os.path.join(restore, "data"), ids)


def main():
    cold_backup()
    online_snapshot()
    print("PASS")


if __name__ == "__main__":
    main()
