#!/usr/bin/env python3
"""Benchmarks of `cops compare` (issue 19) behind docs/performance.md ("Batch compare").

  bench/compare_batch.py papers [--papers 300] [--kbytes 40] [--prior 300]
      A programme committee's run: a fresh copsd on loopback holding `--prior` registered
      papers, then `cops compare --json` over `--papers` new papers of about `--kbytes` KB:
      all pairs within the batch and every paper against the corpus. Planted: 20 papers
      reuse a ~500-word passage of a prior paper, 20 pairs of new papers share one, 5
      pairs are revised copies (one word in 8 changed).
  bench/compare_batch.py dedupe [--files 10000] [--kbytes 4]  (both: [--format auto])
      A corpus builder's run: `cops compare --no-corpus --json` over `--files` files of
      about `--kbytes` KB, with 500 exact and 500 near duplicates (one word in 8 changed)
      of other files in it.

Prints one JSON line: wall seconds and peak RSS of the cops process (GNU time), documents,
pairs found, and how many planted pairs were found. Needs copsd and cops in
${COPS_BUILD_DIR:-build}; texts are pseudo-random words of /usr/share/dict/words (seed 7).
"""
import argparse
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("COPS_BUILD_DIR", os.path.join(ROOT, "build"))


def vocabulary():
    with open("/usr/share/dict/words", encoding="utf-8", errors="replace") as f:
        words = [w.strip().lower() for w in f if w.strip().isalpha()]
    return sorted(set(words))


class Writer:
    def __init__(self, rng, words):
        self.rng = rng
        self.words = words
        # Zipf-like: a few common words, a long tail, as in prose.
        self.cum_weights = list(itertools.accumulate(1.0 / (i + 10) for i in range(len(words))))

    def words_of(self, n):
        return self.rng.choices(self.words, cum_weights=self.cum_weights, k=n)

    def text(self, nbytes):
        out, size = [], 0
        while size < nbytes:
            sentence = self.words_of(self.rng.randint(8, 25))
            s = " ".join(sentence).capitalize() + "."
            out.append(s)
            size += len(s) + 1
        return " ".join(out)

    def revise(self, text):
        words = text.split(" ")
        for i in range(0, len(words), 8):
            words[i] = self.words_of(1)[0]
        return " ".join(words)


def passage(text, nwords, rng):
    words = text.split(" ")
    start = rng.randrange(0, max(1, len(words) - nwords))
    return " ".join(words[start:start + nwords])


def insert(text, extra, rng):
    words = text.split(" ")
    at = rng.randrange(len(words))
    return " ".join(words[:at] + [extra] + words[at:])


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def timed_cops(args):
    """Runs cops under GNU time; returns (exit code, stdout, seconds, peak RSS KiB)."""
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", "/dev/stderr",
           os.path.join(BUILD, "client", "cops")] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    seconds, rss = p.stderr.strip().splitlines()[-1].split()
    return p.returncode, p.stdout, float(seconds), int(rss)


def start_server(data):
    port_file = os.path.join(data, "port")
    server = subprocess.Popen(
        [os.path.join(BUILD, "server", "copsd"), "--data-dir", os.path.join(data, "db"),
         "--listen", "127.0.0.1:0", "--port-file", port_file, "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return server, "127.0.0.1:" + open(port_file).read().strip()
        time.sleep(0.05)
    server.kill()
    sys.exit("copsd did not start")


def found_pairs(result):
    return {tuple(sorted((os.path.basename(p["a"]), os.path.basename(p["b"]))))
            for p in result["pairs"]}


def papers(a, work, rng, writer):
    prior = [writer.text(a.kbytes * 1000) for _ in range(a.prior)]
    os.makedirs(os.path.join(work, "prior"))
    for i, t in enumerate(prior):
        write(os.path.join(work, "prior", "p%04d.txt" % i), t)
    batch = [writer.text(a.kbytes * 1000) for _ in range(a.papers)]
    planted, corpus_planted = set(), set()
    for i in range(20):  # reuse of a prior paper
        batch[i] = insert(batch[i], passage(prior[i], 500, rng), rng)
        corpus_planted.add("b%04d.txt" % i)
    for i in range(20, 60, 2):  # shared passage within the batch
        batch[i + 1] = insert(batch[i + 1], passage(batch[i], 500, rng), rng)
        planted.add(("b%04d.txt" % i, "b%04d.txt" % (i + 1)))
    for i in range(60, 70, 2):  # revised copies
        batch[i + 1] = writer.revise(batch[i])
        planted.add(("b%04d.txt" % i, "b%04d.txt" % (i + 1)))
    os.makedirs(os.path.join(work, "batch"))
    for i, t in enumerate(batch):
        write(os.path.join(work, "batch", "b%04d.txt" % i), t)

    server, address = start_server(work)
    try:
        subprocess.run([os.path.join(BUILD, "client", "cops"), "--server", address, "register",
                        os.path.join(work, "prior")], check=True, stdout=subprocess.DEVNULL)
        code, out, seconds, rss = timed_cops(["--server", address, "--json", "compare",
                                              "--format", a.format] + a.heavy +
                                             [os.path.join(work, "batch")])
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    result = json.loads(out)
    pairs = found_pairs(result)
    corpus_hits = {os.path.basename(c["path"]) for c in result["corpus"] if c.get("violation")}
    print(json.dumps({"bench": "papers", "format": a.format, "papers": a.papers, "kbytes": a.kbytes,
                      "prior_registered": a.prior, "exit": code, "seconds": seconds,
                      "peak_rss_mib": round(rss / 1024, 1), "pairs": len(result["pairs"]),
                      "planted_pairs_found": "%d/%d" % (len(planted & pairs), len(planted)),
                      "corpus_violations": len(corpus_hits),
                      "planted_corpus_found": "%d/%d" % (len(corpus_planted & corpus_hits),
                                                         len(corpus_planted))}))


def dedupe(a, work, rng, writer):
    os.makedirs(os.path.join(work, "files"))
    texts = []
    planted = set()
    for i in range(a.files):
        name = "f%05d.txt" % i
        if i >= 1000 and i < 1500:  # exact duplicate of an earlier file
            src = rng.randrange(0, 1000)
            text = texts[src]
            planted.add(("f%05d.txt" % src, name))
        elif i >= 1500 and i < 2000:  # near duplicate
            src = rng.randrange(0, 1000)
            text = writer.revise(texts[src])
            planted.add(("f%05d.txt" % src, name))
        else:
            text = writer.text(a.kbytes * 1000)
        texts.append(text if i < 1000 else "")  # keep only what later files copy
        write(os.path.join(work, "files", name), text)
    code, out, seconds, rss = timed_cops(["--json", "compare", "--no-corpus",
                                          "--format", a.format] + a.heavy +
                                         [os.path.join(work, "files")])
    result = json.loads(out)
    pairs = found_pairs(result)
    # Planted pairs sharing a source also pair with each other: count only the planted.
    print(json.dumps({"bench": "dedupe", "format": a.format, "files": a.files, "kbytes": a.kbytes, "exit": code,
                      "seconds": seconds, "peak_rss_mib": round(rss / 1024, 1),
                      "pairs": len(result["pairs"]), "clusters": len(result["clusters"]),
                      "planted_pairs_found": "%d/%d" % (len(planted & pairs), len(planted))}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    p = sub.add_parser("papers")
    p.add_argument("--papers", type=int, default=300)
    p.add_argument("--kbytes", type=int, default=40)
    p.add_argument("--prior", type=int, default=300)
    d = sub.add_parser("dedupe")
    d.add_argument("--files", type=int, default=10000)
    d.add_argument("--kbytes", type=int, default=4)
    for cmd in (p, d):
        cmd.add_argument("--format", default="auto", help="cops compare --format")
        cmd.add_argument("--no-heavy-revisions", dest="heavy", action="store_const",
                         const=["--no-heavy-revisions"], default=[],
                         help="cops compare --no-heavy-revisions (pairs by passages only)")
    a = parser.parse_args()
    if a.bench == "papers" and (a.papers < 70 or a.prior < 20):
        parser.error("papers: needs --papers >= 70 and --prior >= 20 (the planted reuse)")
    if a.bench == "dedupe" and a.files < 2000:
        parser.error("dedupe: needs --files >= 2000 (the planted duplicates)")
    rng = random.Random(7)
    writer = Writer(rng, vocabulary())
    work = tempfile.mkdtemp(prefix="cops_compare_bench_")
    try:
        (papers if a.bench == "papers" else dedupe)(a, work, rng, writer)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
