#!/usr/bin/env python3
"""Generates sets of unrelated documents of one genre each, to count false alarms.

The user story: an editor checks manuscripts full of their field's stock phrases, a lawyer
checks contracts made of boilerplate. Documents of one kind written by different people
share phrases ("the terms and conditions", "see the GNU General Public License for more
details", "On error, -1 is returned") without one copying the other. A check of such a
document against a registry of its genre must not be a violation.

Genres, from texts that Debian ships (identical texts are kept once):
  manpage    the English manual pages of every installed package (/usr/share/man/man1-8,
             from dpkg's file lists; at most --pages-per-package per package, an even spread,
             aliases (.so) left out, rendered by groff as man does, lines unbroken, cut
             after --max-words words)
  licence    /usr/share/doc/PACKAGE/copyright of every package (notices, licence grants,
             warranty disclaimers) and the texts of /usr/share/common-licenses
  changelog  the first 400 words of /usr/share/doc/PACKAGE/changelog.Debian.gz (the Debian
             maintainer's release notes: "New upstream release", "Bump Standards-Version")
             and of PACKAGE/changelog.gz (the upstream authors' release notes)
  readme     /usr/share/doc/PACKAGE/README.Debian (how Debian's package differs, set up)
  npm-readme the READMEs of npm packages that eval/fetch_npm_readmes.py cached in --npm-dir
             (what a JavaScript package does, install, usage, licence), as prose: code blocks,
             HTML tags, images and link targets removed, cut after --max-words words; their
             group is the package's owner (its repository's). Not among the default genres: a
             set of its own (--genres npm-readme --npm-dir DIR)
  description the English descriptions of Debian's packages (a synopsis, then what the
             package is for, in the archive's house style: "This package contains the
             development files"), from the archive's Translation-en.xz (--descriptions FILE),
             their group the package's maintainer in apt's package lists (`apt-cache
             dumpavail`, or --packages FILE, the archive's Packages.xz); --exclude-descriptions
             FILE leaves out the packages another release's file describes. Not among the
             default genres: a set of its own (--genres description)

Every text belongs to a group: its package's Debian maintainer (a person or a team, from
dpkg), who writes the changelogs, the copyright files and often the manual pages of all their
packages and reuses their own notes (that is their text, not the genre's). A hash of the group
puts all of its texts in one part, dev (to look at and tune on) or held-out (run once), and
within it on one side, registered (sources/) or checked (tests/): no maintainer's texts are on
both sides of anything. Each part is a set of its own (its tests are checked against its
sources only).

A test that shares a run of --max-shared-run (12) lower-cased words with the registered texts
of at most --common-in (2) groups, or whose runs of --min-run (8, the words a passage needs to
count) shared with such texts cover 12 of its words (an edited copy), is dropped: it holds a
copy of a few groups' text (the same upstream manual, a page modelled on another's, a licence
file quoting another package's notice), which a checker should report. Runs that more groups
hold are the genre's common text (the GPL's notice, "New upstream release"): a test sharing only
those stays, and must not be a violation. Every remaining test expects no violation; its
category is its genre.

Each side is checked against the other (two folds, so every text is checked once): output
--out/dev/a, --out/dev/b, --out/heldout/a and --out/heldout/b, each in the format of
make_set.py (docs/accuracy.md, "Ground-truth format"): sources/ tests/ truth.tsv corpus.txt.

Deterministic (no random numbers: hashes of names); the output depends on the packages
installed. Standard library only. Takes 2-6 minutes on 2 cores (rendering the manual pages).
"""

import argparse
import glob
import gzip
import hashlib
import lzma
import multiprocessing
import os
import re
import subprocess
import sys

WORD = re.compile(r"\w+", re.UNICODE)
PARTS = ("dev", "heldout")
SIDES = ("a", "b")
FOLDS = ("a", "b")  # fold a registers side a and checks side b; fold b the reverse


def words(text):
    return WORD.findall(text.lower())


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def first_words(text, max_words):
    """The text cut after max_words words, at a line end."""
    n, out = 0, []
    for line in text.splitlines():
        out.append(line)
        n += len(words(line))
        if n >= max_words:
            break
    return "\n".join(out) + "\n"


def digest(name):
    return hashlib.sha256(name.encode()).digest()


def packages():
    """package -> maintainer (lower-cased, e-mail dropped), for installed packages."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Maintainer}\n"],
                         capture_output=True, check=True).stdout.decode("utf-8", "replace")
    owners = {}
    for line in out.splitlines():
        package, _, maintainer = line.partition("\t")
        owners[package] = maintainer.split("<")[0].strip().lower() or package
    return owners


def doc_files(owners, filename):
    """(group, name, path) of /usr/share/doc/PACKAGE/filename, not shared through a link."""
    found = []
    for path in sorted(glob.glob(f"/usr/share/doc/*/{filename}")):
        doc_dir = os.path.dirname(path)
        if os.path.islink(path) or os.path.islink(doc_dir):
            continue
        package = os.path.basename(doc_dir)
        found.append((owners.get(package, package), package, path))
    return found


def render(path, max_words):
    source = read_text(path)
    if source.lstrip().startswith(".so "):
        return ""  # another page's alias
    env = dict(os.environ, LC_ALL="C.UTF-8")
    try:
        # As man renders it (tables included), on one line per paragraph, without bold or
        # underlining.
        out = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-P", "-cbou", "-rLL=4000n",
                              "-rLT=4000n"], input=source.encode(), env=env,
                             capture_output=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return first_words(out.decode("utf-8", "replace"), max_words)


def render_one(job):
    path, max_words = job
    return render(path, max_words)


def manpages(owners, per_package, max_words):
    jobs = []  # (group, name, path)
    for listing in sorted(glob.glob("/var/lib/dpkg/info/*.list")):
        package = os.path.basename(listing)[: -len(".list")].split(":")[0]
        try:
            with open(listing, encoding="utf-8", errors="replace") as f:
                mine = sorted(l.strip() for l in f if re.match(r"/usr/share/man/man[1-8]/", l))
        except OSError:
            continue
        mine = [p for p in mine if os.path.isfile(p) and not os.path.islink(p)]
        # An even spread of the package's pages, not the first ones alphabetically.
        mine.sort(key=lambda p: hashlib.sha256(p.encode()).digest())
        for path in mine[:per_package]:
            name = package + "-" + os.path.basename(path).split(".gz")[0]
            jobs.append((owners.get(package, package), name, path))
    with multiprocessing.Pool(os.cpu_count()) as pool:
        texts = pool.map(render_one, [(path, max_words) for _, _, path in jobs], chunksize=16)
    return [(g, n, t) for (g, n, _), t in zip(jobs, texts)]


def markdown_prose(text, max_words):
    """A README's prose: fenced and indented code, HTML, images and link targets removed."""
    text = re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1[^\n]*$", "", text)
    text = re.sub(r"(?s)<!--.*?-->", "", text)
    # A tag whose attributes run over several lines (a logo's <img ...>), then one-line ones
    # (autolinks too).
    text = re.sub(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]{0,2000})?/?>", " ", text)
    text = re.sub(r"<[^>\n]*>", " ", text)
    text = re.sub(r"!\[[^\]]*\](\([^)]*\)|\[[^\]]*\])", " ", text)  # images, badges
    text = re.sub(r"\[([^\]]*)\](\([^)]*\)|\[[^\]]*\])", r"\1", text)  # [text](target), [text][ref]
    text = re.sub(r"(?m)^\[[^\]]*\]:\s*\S+.*$", "", text)        # [ref]: target
    text = re.sub(r"https?://\S+", " ", text)
    lines = [l for l in text.splitlines() if not l.startswith(("    ", "\t"))]
    return first_words("\n".join(lines), max_words)


def npm_readmes(npm_dir, max_words):
    """(group, name, text) of the READMEs in fetch_npm_readmes.py's cache."""
    docs = []
    with open(os.path.join(npm_dir, "index.tsv"), encoding="utf-8") as f:
        for line in f:
            name, _version, owner, file, _sha = line.rstrip("\n").split("\t")
            text = read_text(os.path.join(npm_dir, "readmes", file))
            docs.append((owner.lower() or name, name, markdown_prose(text, max_words)))
    return docs


def description_records(path):
    """The records of a Translation-en file (xz), each a list of lines."""
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [record.splitlines() for record in f.read().split("\n\n")]


def debian_descriptions(path, packages_file=None, exclude=None):
    """(group, name, text) of the package descriptions in a Translation-en file (xz): the
    synopsis, a blank line, the long description with its " ." lines as paragraph breaks.
    Maintainers from `packages_file` (an archive's Packages.xz) or apt's lists; packages
    described in the Translation-en file `exclude` are left out."""
    maintainer = {}
    if packages_file:
        with lzma.open(packages_file, "rt", encoding="utf-8") as f:
            listing = f.read()
    else:
        listing = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True,
                                 check=True).stdout
    left_out = set()
    for record in description_records(exclude) if exclude else []:
        left_out.update(line[len("Package: "):] for line in record if line.startswith("Package: "))
    package = None
    for line in listing.splitlines():
        if line.startswith("Package: "):
            package = line[len("Package: "):]
        elif line.startswith("Maintainer: ") and package:
            name = line[len("Maintainer: "):].split("<")[0].strip().lower()
            maintainer.setdefault(package, name or package)  # as packages() names them
    docs = []
    for record in description_records(path):
        package, lines = None, []
        for line in record:
            if line.startswith("Package: "):
                package = line[len("Package: "):]
            elif line.startswith("Description-en: "):
                lines = [line[len("Description-en: "):], ""]
            elif line.startswith(" ") and lines:
                lines.append("" if line.strip() == "." else line[1:])
        if package in maintainer and package not in left_out and lines:
            docs.append((maintainer[package], package, "\n".join(lines).strip() + "\n"))
    return docs


def runs(ws, n):
    return {hash(tuple(ws[i:i + n])) for i in range(len(ws) - n + 1)}


def is_copy(ws, holders, args):
    """Whether the test copies the text of a few groups (see the module's docstring)."""
    def few(n, i):
        return 0 < len(holders.get((n, hash(tuple(ws[i:i + n]))), ())) <= args.common_in

    n = args.max_shared_run
    if any(few(n, i) for i in range(len(ws) - n + 1)):
        return True
    covered = [False] * len(ws)  # words inside runs of min_run that few groups hold
    n = args.min_run
    for i in range(len(ws) - n + 1):
        if few(n, i):
            covered[i:i + n] = [True] * n
    return sum(covered) >= args.max_shared_run


def safe(name):
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)[:80]


def write_fold(out, genres, sources, tests, args):
    """Writes one set: `sources` registered, `tests` checked, copies dropped; a summary."""
    for sub in ("sources", "tests"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    truth = ["# test_file\tcategory\tsource_file\tviolation"]
    lengths = (args.min_run, args.max_shared_run)
    holders = {}  # (length, run) -> groups of the registered texts holding it (any genre)
    registered = {genre: 0 for genre in genres}
    for genre, group, name, text in sources:
        with open(os.path.join(out, "sources", f"{genre}-{safe(name)}.txt"), "w",
                  encoding="utf-8") as f:
            f.write(text)
        registered[genre] += 1
        ws = words(text)
        for n in lengths:
            for run in runs(ws, n):
                holders.setdefault((n, run), set()).add(group)
    kept = {genre: 0 for genre in genres}
    dropped = dict(kept)
    for genre, group, name, text in tests:
        if is_copy(words(text), holders, args):
            dropped[genre] += 1
            continue
        file = f"{genre}-{safe(name)}.txt"
        with open(os.path.join(out, "tests", file), "w", encoding="utf-8") as f:
            f.write(text)
        truth.append(f"{file}\t{genre}\t-\t0")
        kept[genre] += 1
    summary = "; ".join(f"{genre}: {registered[genre]} registered, {kept[genre]} tests "
                        f"({dropped[genre]} dropped)" for genre in genres)
    with open(os.path.join(out, "truth.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(truth) + "\n")
    with open(os.path.join(out, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write(f"same-genre; {summary}; dropped: sharing a {args.max_shared_run}-word run "
                f"with the registered texts of at most {args.common_in} groups\n")
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    ap.add_argument("--genres", default="licence,manpage,changelog,readme")
    ap.add_argument("--pages-per-package", type=int, default=250,
                    help="manual pages per package at most")
    ap.add_argument("--max-words", type=int, default=2000,
                    help="manual pages and READMEs cut after this")
    ap.add_argument("--npm-dir", help="eval/fetch_npm_readmes.py's cache (genre npm-readme)")
    ap.add_argument("--descriptions",
                    help="the archive's main/i18n/Translation-en.xz (genre description)")
    ap.add_argument("--packages",
                    help="genre description: maintainers from this Packages.xz, not apt's lists")
    ap.add_argument("--exclude-descriptions",
                    help="genre description: leave out packages this Translation-en.xz describes")
    ap.add_argument("--min-words", type=int, default=60, help="shorter documents are left out")
    ap.add_argument("--max-shared-run", type=int, default=12,
                    help="tests sharing a run of this many words with a source are dropped")
    ap.add_argument("--min-run", type=int, default=8,
                    help="... or whose shared runs of this many words cover that many words")
    ap.add_argument("--common-in", type=int, default=2,
                    help="unless registered texts of more than this many groups hold the run")
    args = ap.parse_args()
    if os.path.isdir(args.out) and os.listdir(args.out):
        sys.exit(f"make_same_genre_set: {args.out} is not empty")
    owners = packages()
    summary = {}
    genres = args.genres.split(",")
    texts = {}  # genre -> group -> [(name, text)]
    for genre in genres:
        if genre == "licence":
            docs = [(g, n, read_text(p)) for g, n, p in doc_files(owners, "copyright")]
            for path in sorted(glob.glob("/usr/share/common-licenses/*")):
                if not os.path.islink(path):
                    docs.append(("common-licenses", os.path.basename(path), read_text(path)))
        elif genre == "changelog":
            docs = [(g, n + suffix, first_words(read_text(p), 400))
                    for name, suffix in (("changelog.Debian.gz", ""), ("changelog.gz", "-up"))
                    for g, n, p in doc_files(owners, name)]
        elif genre == "readme":
            docs = [(g, n + "-" + os.path.basename(p), read_text(p))
                    for g, n, p in doc_files(owners, "README.Debian*")]
        elif genre == "manpage":
            docs = manpages(owners, args.pages_per_package, args.max_words)
        elif genre == "npm-readme":
            if not args.npm_dir:
                sys.exit("make_same_genre_set: genre npm-readme needs --npm-dir")
            docs = npm_readmes(args.npm_dir, args.max_words)
        elif genre == "description":
            if not args.descriptions:
                sys.exit("make_same_genre_set: genre description needs --descriptions FILE")
            docs = debian_descriptions(args.descriptions, args.packages,
                                       args.exclude_descriptions)
        else:
            sys.exit(f"make_same_genre_set: unknown genre {genre!r}")
        seen = set()
        for group, name, text in docs:
            key = " ".join(words(text))
            if len(key.split()) < args.min_words or key in seen:
                continue
            seen.add(key)
            texts.setdefault(genre, {}).setdefault(group, []).append((name, text))
    # Largest groups first, each to the part and then the side holding fewer texts so far
    # (ties by hash): balanced halves, and no group's texts on both sides of either split.
    size = {}
    for by_group in texts.values():
        for group, held in by_group.items():
            size[group] = size.get(group, 0) + len(held)
    part_of, held_by = {}, {p: 0 for p in PARTS}
    for group in sorted(size, key=lambda g: (-size[g], digest(g))):
        part_of[group] = min(PARTS, key=lambda p: (held_by[p], digest(p + group)))
        held_by[part_of[group]] += size[group]
    side_of, on_side = {}, {(p, s): 0 for p in PARTS for s in SIDES}
    for group in sorted(size, key=lambda g: (-size[g], digest(g))):
        part = part_of[group]
        side_of[group] = min(SIDES, key=lambda s: (on_side[(part, s)], digest(s + group)))
        on_side[(part, side_of[group])] += size[group]
    sides = {(p, s): [] for p in PARTS for s in SIDES}  # [(genre, group, name, text)]
    for genre in genres:
        for group in sorted(texts.get(genre, {})):
            for name, text in texts[genre][group]:
                sides[(part_of[group], side_of[group])].append((genre, group, name, text))
    for part in PARTS:
        for fold, (registered_side, checked_side) in zip(FOLDS, (SIDES, SIDES[::-1])):
            summary[(part, fold)] = write_fold(os.path.join(args.out, part, fold), genres,
                                               sides[(part, registered_side)],
                                               sides[(part, checked_side)], args)
    for key in sorted(summary):
        print(f"same-genre {key[0]}/{key[1]}: {summary[key]}")


if __name__ == "__main__":
    main()
