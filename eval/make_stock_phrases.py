#!/usr/bin/env python3
"""Builds core/stock_phrases.txt: word 4-grams common in English prose (core/stock_phrases.h).

A phrase that many unrelated writers use ("at the same time", "in order to make", "on the
other hand") is no evidence of copying. This script extracts prose from Debian packages that
no evaluation set uses (docs/accuracy.md draws on the Python documentation, the Debian
Administrator's Handbook, manual pages, copyright files, changelogs and PAN's books), cuts it
into documents of about 1,000 words, and has `cops-eval stock-phrases` keep the 4-grams (in
COPS's canonical form) that at least --min-documents documents of at least --min-corpora of
the corpora use:

  perl      the Perl documentation (perl-doc: /usr/share/perl/*/pod, POD markup and
            verbatim code dropped)
  postgres  the PostgreSQL 15 manual (postgresql-doc-15, HTML, <pre> code dropped)
  git       Git's manual pages and guides (git-doc, HTML, code dropped)
  fortunes  the fortune cookie files (fortunes, fortunes-min: quotations, jokes, literature)
  debref    the Debian Reference (debian-reference-en, HTML, code dropped)
  gnu       the GNU Coding Standards and Information for Maintainers of GNU Software
            (gnu-standards, info)
  bash      the Bash reference manual (bash-doc, HTML, code dropped)

Usage (the packages: scripts/install-deps.sh does not install them; apt-get install
perl-doc postgresql-doc-15 git-doc fortunes gnu-standards debian-reference-en bash-doc):
  python3 eval/make_stock_phrases.py --cops-eval build/eval/cops-eval --out core/stock_phrases.txt
"""

import argparse
import glob
import gzip
import html.parser
import os
import re
import subprocess
import sys
import tempfile

WORDS_PER_DOCUMENT = 1000


class _HtmlText(html.parser.HTMLParser):
    """Text of an HTML page without code, scripts, styles and navigation."""

    SKIP = {"pre", "code", "script", "style", "tt", "kbd", "samp", "head", "nav"}
    BLOCK = {"p", "div", "li", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th",
             "tr", "br", "table", "blockquote", "section"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_text(path):
    p = _HtmlText()
    with open(path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    return "".join(p.parts)


def pod_text(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        paragraphs = f.read().split("\n\n")
    for par in paragraphs:
        if not par.strip() or par.startswith((" ", "\t", "=")):
            continue  # verbatim code, commands
        out.append(re.sub(r"[A-Z]<+\s*([^<>]*?)\s*>+", r"\1", par))
    return "\n\n".join(out)


def info_text(path):
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    # Drop the node headers and menus; keep the prose.
    return "\n\n".join(par for par in text.split("\n\n")
                       if not par.startswith(("\x1f", "File:", "* Menu", "*")))


def fortunes_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return "\n\n".join(f.read().split("\n%\n"))


def prose_paragraphs(text):
    """Paragraphs that look like prose: mostly words, not tables or code."""
    for par in re.split(r"\n\s*\n", text):
        words = par.split()
        if len(words) < 8:
            continue
        alpha = sum(1 for w in words if re.fullmatch(r"[A-Za-z][A-Za-z'’,.;:!?()\"-]*", w))
        if alpha >= 0.8 * len(words):
            yield " ".join(words)


def corpora():
    return {
        "perl": (sorted(glob.glob("/usr/share/perl/5.*/pod/*.pod")), pod_text),
        "postgres": (sorted(glob.glob("/usr/share/doc/postgresql-doc-15/html/*.html")), html_text),
        "git": (sorted(glob.glob("/usr/share/doc/git-doc/*.html")), html_text),
        "fortunes": (sorted(p for p in glob.glob("/usr/share/games/fortunes/*")
                            if os.path.isfile(p) and not p.endswith((".dat", ".u8"))
                            and not os.path.islink(p)), fortunes_text),
        "debref": (sorted(glob.glob("/usr/share/debian-reference/*.en.html")), html_text),
        "gnu": (sorted(glob.glob("/usr/share/info/standards.info*.gz") +
                       glob.glob("/usr/share/info/maintain.info*.gz")), info_text),
        "bash": (["/usr/share/doc/bash-doc/bashref.html"]
                 if os.path.exists("/usr/share/doc/bash-doc/bashref.html") else [], html_text),
    }


def write_documents(name, paths, extract, out_dir):
    """Cuts a corpus's prose into documents of about WORDS_PER_DOCUMENT words."""
    folder = os.path.join(out_dir, name)
    os.makedirs(folder)
    count, current, words = 0, [], 0

    def flush():
        nonlocal count, current, words
        if current:
            with open(os.path.join(folder, "d%05d.txt" % count), "w", encoding="utf-8") as f:
                f.write("\n\n".join(current) + "\n")
            count += 1
        current, words = [], 0

    for path in paths:
        for par in prose_paragraphs(extract(path)):
            current.append(par)
            words += len(par.split())
            if words >= WORDS_PER_DOCUMENT:
                flush()
        flush()  # no document spans two files
    return folder, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cops-eval", default="build/eval/cops-eval")
    ap.add_argument("--out", default="core/stock_phrases.txt")
    ap.add_argument("--min-documents", type=int, default=10)
    ap.add_argument("--min-corpora", type=int, default=3)
    ap.add_argument("--max-phrases", type=int, default=20000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folders = []
        for name, (paths, extract) in corpora().items():
            if not paths:
                sys.exit(f"make_stock_phrases: no files for corpus {name}: install its package")
            folder, count = write_documents(name, paths, extract, tmp)
            print(f"make_stock_phrases: {name}: {len(paths)} files, {count} documents",
                  file=sys.stderr)
            folders.append(folder)
        cmd = [args.cops_eval, "stock-phrases", "--out", args.out,
               "--min-documents", str(args.min_documents),
               "--min-corpora", str(args.min_corpora), "--max-phrases", str(args.max_phrases)]
        for f in folders:
            cmd += ["--corpus", f]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
