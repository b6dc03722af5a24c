#!/usr/bin/env python3
"""Fetches the README files of npm packages: a genre of texts written by many different people.

A package's README says what it does, how to install it and use it, and under which licence,
with the genre's stock phrases ("npm install --save", "Pull requests are welcome", "MIT
License", "Returns a promise that resolves to"). Written by thousands of authors, none tuned
to by us, they make a same-genre set of unrelated texts (eval/make_same_genre_set.py
--npm-dir) that the Debian-shipped genres do not cover.

The packages: a breadth-first walk of the npm registry's dependency graph (dependencies,
devDependencies and peerDependencies of each package's latest version, in name order) from
fixed seeds, up to --packages packages. For each: its latest version's tarball, whose
top-level README (README.md, readme.markdown, README, ...) is kept. The cache folder
(--out, default $COPS_DATA_DIR/npm-readmes, else ~/.cache/cops/npm-readmes) holds
readmes/NAME@VERSION.md (a README already there is not downloaded again) and index.tsv
(name, version, owner, file, SHA-256 of the README), written anew by each walk. The owner,
who wrote the text: the package's repository owner (a person or organisation), else its
author, else its scope or name. READMEs carry their packages' licences, so the cache is never
committed. The registry moves: a walk made later fetches other versions and packages;
index.tsv records what a set was made from.

Standard library only. ~15 minutes for the default 8,000 packages (16 connections).
"""

import argparse
import concurrent.futures
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import urllib.parse
import urllib.request

REGISTRY = "https://registry.npmjs.org/"
SEEDS = ("express", "react", "lodash", "webpack", "eslint", "typescript", "jest", "@babel/core",
         "mocha", "gulp", "grunt", "vue", "@angular/core", "next", "koa", "request", "axios",
         "commander", "yargs", "chalk", "debug", "async", "moment", "rollup", "prettier",
         "karma", "browserify", "socket.io", "mongoose", "sequelize", "pm2", "nodemon")
README = re.compile(r"^package/(readme)(\.(md|markdown|txt|rst))?$", re.IGNORECASE)
MAX_TARBALL = 8 << 20


def get(url, timeout=60):
    req = urllib.request.Request(url, headers={"Accept": "application/json",
                                               "User-Agent": "cops-eval"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read(MAX_TARBALL + 1)


def owner(meta, name):
    """Who wrote a package's text: its repository's owner (a person or an organisation,
    whose packages share their READMEs' wording), else its author, else its scope or name."""
    repo = meta.get("repository")
    url = repo.get("url", "") if isinstance(repo, dict) else repo if isinstance(repo, str) else ""
    m = re.search(r"(?:github\.com|gitlab\.com|bitbucket\.org)[/:]([^/]+)/", url) or \
        re.match(r"^(?:github:|gitlab:|bitbucket:)?([A-Za-z0-9_.-]+)/[A-Za-z0-9_.-]+$", url)
    if m:
        return m.group(1).lower()
    author = meta.get("author")
    if isinstance(author, dict):
        author = author.get("name")
    if isinstance(author, str) and author.strip():
        return author.split("<")[0].strip().lower()
    return name.split("/")[0] if name.startswith("@") else name


def packument(name):
    """(version, owner, tarball URL, [dependency names]) of name's latest version."""
    data = json.loads(get(REGISTRY + urllib.parse.quote(name, safe="@")))
    version = data.get("dist-tags", {}).get("latest")
    meta = data.get("versions", {}).get(version)
    if not meta:
        return None
    deps = set()
    for field in ("dependencies", "devDependencies", "peerDependencies"):
        if isinstance(meta.get(field), dict):
            deps.update(meta[field])
    return version, owner(meta, name), meta.get("dist", {}).get("tarball"), sorted(deps)


def readme_of(tarball_url):
    data = get(tarball_url, timeout=120)
    if len(data) > MAX_TARBALL:
        return None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and README.match(member.name):
                return tar.extractfile(member).read()
    return None


def file_name(name, version):
    return re.sub(r"[^A-Za-z0-9_.@+-]", "_", f"{name}@{version}") + ".md"


def visit(job):
    name, readmes, keep = job
    try:
        found = packument(name)
        if found is None:
            return name, None, []
        version, group, tarball, deps = found
        cached = os.path.join(readmes, file_name(name, version))
        if not keep:
            text = None  # walked through only
        elif os.path.exists(cached):
            with open(cached, "rb") as f:
                text = f.read()
        else:
            text = readme_of(tarball) if tarball else None
        return name, (version, group, text), deps
    except Exception as e:  # a missing, unpublished or malformed package: skipped
        print(f"fetch_npm_readmes: {name}: {e}", file=sys.stderr)
        return name, None, []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.path.join(os.environ.get("COPS_DATA_DIR") or
                           os.path.expanduser("~/.cache/cops"), "npm-readmes")
    ap.add_argument("--out", default=default)
    ap.add_argument("--packages", type=int, default=8000, help="packages to visit at most")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--seeds", help="comma-separated packages to start from (default: SEEDS)")
    ap.add_argument("--exclude", help="another walk's index.tsv: its packages are walked through "
                    "but not kept (a second set that shares no README with the first)")
    args = ap.parse_args()
    readmes = os.path.join(args.out, "readmes")
    os.makedirs(readmes, exist_ok=True)
    seeds = args.seeds.split(",") if args.seeds else list(SEEDS)
    excluded = set()
    if args.exclude:
        with open(args.exclude, encoding="utf-8") as f:
            excluded = {line.split("\t")[0] for line in f if line.strip()}
    queue, seen, visited, kept = list(seeds), set(seeds), 0, 0
    index_path = os.path.join(args.out, "index.tsv")
    with open(index_path + ".new", "w", encoding="utf-8") as index, \
            concurrent.futures.ThreadPoolExecutor(args.connections) as pool:
        while queue and visited < args.packages:
            wave, queue = queue[:args.packages - visited], queue[args.packages - visited:]
            visited += len(wave)
            jobs = [(n, readmes, n not in excluded) for n in wave]
            for name, got, deps in pool.map(visit, jobs):
                for d in deps:
                    if d not in seen:
                        seen.add(d)
                        queue.append(d)
                if got is None or got[2] is None or name in excluded:
                    continue
                version, group, text = got
                file = file_name(name, version)
                path = os.path.join(readmes, file)
                if not os.path.exists(path):
                    with open(path + ".tmp", "wb") as f:
                        f.write(text)
                    os.replace(path + ".tmp", path)
                index.write(f"{name}\t{version}\t{group}\t{file}\t"
                            f"{hashlib.sha256(text).hexdigest()}\n")
                kept += 1
            print(f"fetch_npm_readmes: {visited} visited, {kept} READMEs", file=sys.stderr)
    os.replace(index_path + ".new", index_path)
    print(args.out)


if __name__ == "__main__":
    main()
