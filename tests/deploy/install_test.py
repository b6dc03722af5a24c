#!/usr/bin/env python3
"""`cmake --install` into a temporary prefix, as docs/operations.md gives it; the installed
copsd serves and converts an HTML document through the installed cops-convert-worker (HTML
is parsed only in the worker, so registration fails if copsd cannot find it), and the
installed cops's health check (the container probes' command) tells serving from stopped."""

import json
import os
import random

from harness import Copsd, TempDir, build_dir, check, run, run_ok


def prose(words, seed):
    rng = random.Random(seed)
    vocab = ("river stone ledger harvest window copper lantern meadow thunder quiet "
             "orchard signal parcel marble candle winter valley letter engine garden "
             "harbor silver shadow morning bridge anchor pocket ribbon forest mirror").split()
    return " ".join(rng.choice(vocab) for _ in range(words))


def main():
    with TempDir("install") as tmp:
        prefix = os.path.join(tmp, "usr")
        run_ok(["cmake", "--install", build_dir(), "--prefix", prefix])
        copsd = os.path.join(prefix, "bin", "copsd")
        cops = os.path.join(prefix, "bin", "cops")
        worker = os.path.join(prefix, "libexec", "cops", "cops-convert-worker")
        milter = os.path.join(prefix, "bin", "cops-milter")
        for exe in (copsd, cops, worker, milter):
            check(os.access(exe, os.X_OK), f"not installed: {exe}")

        with Copsd(copsd, tmp).start() as server:
            check(f"convert_worker={worker}" in server.log(),
                  f"copsd does not use the installed worker {worker}:\n{server.log()}")
            paragraphs = [prose(120, seed) for seed in range(3)]
            html = os.path.join(tmp, "essay.html")
            with open(html, "w") as f:
                f.write("<html><head><title>Essay</title></head><body>" +
                        "".join(f"<p>{p}</p>" for p in paragraphs) + "</body></html>")
            reg = run_ok([cops, "--server", server.address, "--json", "register", html])
            doc_id = json.loads(reg.stdout.splitlines()[0])["doc_id"]
            chk = run([cops, "--server", server.address, "--json", "check", html])
            report = json.loads(chk.stdout)
            check(report["violation"] and report["matches"][0]["doc_id"] == doc_id,
                  f"the registered HTML document is not found: {chk.stdout}")
            health = run_ok([cops, "--server", server.address, "health"])
            check(health.stdout.strip() == "SERVING", f"cops health: {health.stdout}")
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")
        down = run([cops, "--server", server.address, "--timeout", "2", "health"])
        check(down.returncode != 0, "cops health succeeds with copsd stopped")
    print("PASS")


if __name__ == "__main__":
    main()
