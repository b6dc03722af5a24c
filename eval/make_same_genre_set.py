#!/usr/bin/env python3
"""Generates a set of unrelated documents of one genre each, to count false alarms.

The user story: an editor checks manuscripts full of their field's stock phrases, a lawyer
checks contracts made of boilerplate. Documents of one kind written by different people
share phrases ("the terms and conditions", "see the GNU General Public License for more
details", "this manual page was written for the Debian project") without one copying the
other. A check of such a document against a registry of its genre must not be a violation.

Genres, from texts this Debian machine ships (identical files are kept once; one licence and
one changelog per Debian maintainer, named by the first changelog entry's signature, since a
maintainer reuses their own notes across packages: that is their text, not the genre's):
  licence    /usr/share/doc/PACKAGE/copyright (machine-readable or free-form copyright files:
             notices, licence grants, warranty disclaimers)
  manpage    one section-1 manual page per package (/usr/share/man/man1, rendered with
             `man -P cat -l`, lines unbroken), from the package lists in /var/lib/dpkg/info
  changelog  the first 400 words of /usr/share/doc/PACKAGE/changelog.Debian.gz (maintainers'
             release notes: "New upstream release", "Bump Standards-Version")

Of each genre, a seeded half is registered (sources/) and the other half checked (tests/).
A test that shares a run of --max-shared-run words (lower-cased words) with at most
--common-in registered documents is dropped: it holds a copy of one document (the same
upstream manual, a sibling package's notes), not the genre's boilerplate. Runs found in more
registered documents are the genre's common text (the GPL's notice, the MIT grant, "New
upstream release"): a test sharing only those stays, and must not be a violation. Every
remaining test expects no violation; its category is its genre.

Output (under --out), in the format of make_set.py (docs/accuracy.md, "Ground-truth format"):
  sources/ tests/ truth.tsv corpus.txt

Everything is seeded; the output depends on the packages installed. Standard library only.
"""

import argparse
import glob
import gzip
import os
import random
import re
import subprocess
import sys

WORD = re.compile(r"\w+", re.UNICODE)


def words(text):
    return WORD.findall(text.lower())


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


SIGNATURE = re.compile(r"^ -- (.+?) <", re.MULTILINE)


def maintainer(doc_dir):
    m = SIGNATURE.search(read_text(os.path.join(doc_dir, "changelog.Debian.gz")))
    return m.group(1).strip().lower() if m else None


def one_per_maintainer(paths):
    docs, seen = {}, set()
    for path in paths:
        doc_dir = os.path.dirname(path)
        if os.path.islink(path) or os.path.islink(doc_dir):
            continue  # shared with another package
        who = maintainer(doc_dir)
        if who is None or who in seen:
            continue
        seen.add(who)
        docs[os.path.basename(doc_dir)] = path
    return docs


def licences():
    paths = one_per_maintainer(sorted(glob.glob("/usr/share/doc/*/copyright")))
    return {name: read_text(path) for name, path in paths.items()}


def changelogs(max_words=400):
    docs = {}
    paths = one_per_maintainer(sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz")))
    for name, path in paths.items():
        text = read_text(path)
        # Cut after max_words words, at a line end.
        n, out = 0, []
        for line in text.splitlines():
            out.append(line)
            n += len(words(line))
            if n >= max_words:
                break
        docs[name] = "\n".join(out) + "\n"
    return docs


def manpages(rng, limit):
    # One section-1 page per package, from dpkg's file lists.
    pages = {}
    for listing in sorted(glob.glob("/var/lib/dpkg/info/*.list")):
        package = os.path.basename(listing)[: -len(".list")].split(":")[0]
        try:
            with open(listing, encoding="utf-8", errors="replace") as f:
                mine = [l.strip() for l in f if l.startswith("/usr/share/man/man1/")]
        except OSError:
            continue
        mine = [p for p in mine if os.path.isfile(p) and not os.path.islink(p)]
        if mine:
            pages[package] = sorted(mine)[0]
    chosen = sorted(pages)
    rng.shuffle(chosen)
    docs = {}
    env = dict(os.environ, MANWIDTH="4000", LC_ALL="C.UTF-8")
    for package in chosen:
        if len(docs) >= limit:
            break
        try:
            out = subprocess.run(["man", "-P", "cat", "-l", pages[package]], env=env,
                                 capture_output=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        text = out.decode("utf-8", "replace")
        if len(words(text)) >= 80:
            docs[package] = text
    return docs


def runs(ws, n):
    return {" ".join(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--genres", default="licence,manpage,changelog")
    ap.add_argument("--manpages", type=int, default=1000, help="manual pages at most")
    ap.add_argument("--min-words", type=int, default=60, help="shorter documents are left out")
    ap.add_argument("--max-shared-run", type=int, default=12,
                    help="tests sharing a run of this many words with a source are dropped")
    ap.add_argument("--common-in", type=int, default=2,
                    help="unless more than this many sources hold the run")
    args = ap.parse_args()
    if os.path.isdir(args.out) and os.listdir(args.out):
        sys.exit(f"make_same_genre_set: {args.out} is not empty")
    rng = random.Random(args.seed)
    os.makedirs(os.path.join(args.out, "sources"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "tests"), exist_ok=True)
    truth = ["# test_file\tcategory\tsource_file\tviolation"]
    summary = []
    for genre in args.genres.split(","):
        if genre == "licence":
            docs = licences()
        elif genre == "changelog":
            docs = changelogs()
        elif genre == "manpage":
            docs = manpages(rng, args.manpages)
        else:
            sys.exit(f"make_same_genre_set: unknown genre {genre!r}")
        seen, texts = set(), []
        for name in sorted(docs):
            text = docs[name]
            key = " ".join(words(text))
            if len(key.split()) < args.min_words or key in seen:
                continue
            seen.add(key)
            texts.append(text)
        rng.shuffle(texts)
        half = len(texts) // 2
        sources, tests = texts[:half], texts[half:]
        registered = {}  # run -> registered documents holding it
        for i, text in enumerate(sources):
            with open(os.path.join(args.out, "sources", f"{genre}-s{i:04d}.txt"), "w",
                      encoding="utf-8") as f:
                f.write(text)
            for run in runs(words(text), args.max_shared_run):
                registered[run] = registered.get(run, 0) + 1
        kept = dropped = 0
        for text in tests:
            if any(0 < registered.get(run, 0) <= args.common_in
                   for run in runs(words(text), args.max_shared_run)):
                dropped += 1
                continue
            name = f"{genre}-t{kept:04d}.txt"
            with open(os.path.join(args.out, "tests", name), "w", encoding="utf-8") as f:
                f.write(text)
            truth.append(f"{name}\t{genre}\t-\t0")
            kept += 1
        summary.append(f"{genre}: {len(sources)} registered, {kept} tests "
                       f"({dropped} dropped sharing a {args.max_shared_run}-word run with at most "
                       f"{args.common_in} sources)")
    with open(os.path.join(args.out, "truth.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(truth) + "\n")
    with open(os.path.join(args.out, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write(f"same-genre seed={args.seed}; " + "; ".join(summary) + "\n")
    print("; ".join(summary))


if __name__ == "__main__":
    main()
