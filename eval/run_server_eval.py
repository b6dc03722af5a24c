#!/usr/bin/env python3
"""Measures the default COPS setting through the real server and client.

Starts copsd on an ephemeral loopback port with a fresh data directory, registers every
source with `cops register --json`, checks every test with `cops check --json`, and scores the
decisions against the ground truth exactly as cops-eval does (docs/accuracy.md). With
--decisions (a file written by `cops-eval check --decisions`), it also reports how many
decisions agree with the in-process evaluation. Standard library only.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_truth(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, cat, src, viol = line.split("\t")
            rows.append((name, cat, src, viol == "1"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="build directory holding server/copsd, client/cops")
    ap.add_argument("--set", required=True, help="evaluation set (sources/, tests/, truth.tsv)")
    ap.add_argument("--threshold", type=float, default=None,
                    help="decision threshold passed to cops check (default: the server's)")
    ap.add_argument("--decisions", default=None, help="cops-eval check --decisions output")
    ap.add_argument("--copsd-arg", action="append", default=[], help="extra copsd argument")
    args = ap.parse_args()

    copsd = os.path.join(args.build, "server", "copsd")
    cops = os.path.join(args.build, "client", "cops")
    for exe in (copsd, cops):
        if not os.access(exe, os.X_OK):
            sys.exit(f"run_server_eval: {exe} is not built")
    data = tempfile.mkdtemp(prefix="cops-eval-")
    addr = f"127.0.0.1:{free_port()}"
    log = open(os.path.join(data, "copsd.log"), "w")
    server = subprocess.Popen([copsd, "--data-dir", os.path.join(data, "db"), "--listen", addr]
                              + args.copsd_arg, stdout=log, stderr=subprocess.STDOUT)
    env = dict(os.environ, COPS_SERVER=addr)
    try:
        for _ in range(100):  # up to 10 s for the server to listen
            if server.poll() is not None:
                sys.exit(f"run_server_eval: copsd exited early; see {log.name}")
            if subprocess.run([cops, "--server", addr, "--json", "stats"], env=env,
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        t0 = time.time()
        src_dir = os.path.join(args.set, "sources")
        reg = subprocess.run([cops, "--server", addr, "--json", "register", src_dir], env=env,
                             capture_output=True, text=True)
        if reg.returncode != 0:
            sys.exit(f"run_server_eval: register failed: {reg.stderr.strip()}")
        doc_of = {}
        for line in reg.stdout.splitlines():
            r = json.loads(line)
            doc_of[r["doc_id"]] = os.path.basename(r["path"])
        t_reg = time.time() - t0

        truth = read_truth(os.path.join(args.set, "truth.tsv"))
        t0 = time.time()
        results = {}
        for name, cat, src, viol in truth:
            cmd = [cops, "--server", addr, "--json", "check"]
            if args.threshold is not None:
                cmd += ["--threshold", str(args.threshold)]
            cmd.append(os.path.join(args.set, "tests", name))
            c = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if c.returncode not in (0, 1):
                sys.exit(f"run_server_eval: check {name} failed: {c.stderr.strip()}")
            rep = json.loads(c.stdout)
            flagged = {doc_of.get(m["doc_id"], "?") for m in rep["matches"] if m["violation"]}
            results[name] = (bool(rep["violation"]), flagged)
        t_check = time.time() - t0
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(data, ignore_errors=True)

    # Scoring: the same rules as cops-eval (docs/accuracy.md, "How tests are scored").
    cats, order = {}, []
    neg = fa = 0
    tot = {"tp": 0, "fp": 0, "fn": 0}
    for name, cat, src, viol in truth:
        decided, flagged = results[name]
        c = cats.setdefault(cat, {"tests": 0, "tp": 0, "fp": 0, "fn": 0, "pos": viol})
        if cat not in order:
            order.append(cat)
        c["tests"] += 1
        if viol:
            hit = src in flagged
            c["tp"] += hit
            c["fn"] += not hit
            c["fp"] += (not hit) and decided
        else:
            neg += 1
            fa += decided
            c["fp"] += decided
    print(f"Through copsd and cops: {len(doc_of)} sources registered in {t_reg:.1f} s, "
          f"{len(truth)} tests checked in {t_check:.1f} s (one `cops check` process each).\n")
    print("| category | tests | TP | FP | FN | precision | recall | F1 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    order.sort(key=lambda k: (not cats[k]["pos"], k))
    for k in order:
        c = cats[k]
        for key in tot:
            tot[key] += c[key]
        if not c["pos"]:
            print(f"| {k} (no violation expected) | {c['tests']} | | {c['fp']} | | | | "
                  f"false alarms {100.0 * c['fp'] / c['tests']:.1f}% |")
            continue
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
        r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 1.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        print(f"| {k} | {c['tests']} | {c['tp']} | {c['fp']} | {c['fn']} | {p:.3f} | {r:.3f} | {f1:.3f} |")
    p = tot["tp"] / (tot["tp"] + tot["fp"]) if tot["tp"] + tot["fp"] else 0.0
    r = tot["tp"] / (tot["tp"] + tot["fn"]) if tot["tp"] + tot["fn"] else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(f"| **overall** | {len(truth)} | {tot['tp']} | {tot['fp']} | {tot['fn']} | {p:.3f} | {r:.3f} | {f1:.3f} |")
    print(f"\nFalse alarms on unrelated documents: {fa}/{neg}.")
    if args.decisions:
        agree = total = 0
        with open(args.decisions, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                name, _cat, decided = line.rstrip("\n").split("\t")[:3]
                total += 1
                agree += results[name][0] == (decided == "1")
        print(f"The server's decision agrees with the in-process evaluation on {agree}/{total} tests.")


if __name__ == "__main__":
    main()
