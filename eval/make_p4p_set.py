#!/usr/bin/env python3
"""Builds evaluation sets from P4P: paraphrases written by people, not by our scripts.

P4P (eval/fetch_p4p.sh fetches it) holds 856 pairs, one tokenized snippet per line: line i
of p4p_reference.txt is a passage of a PAN-PC-10 source book, line i of p4p_source.txt a
person's paraphrase of it (a plagiarism case of the corpus, 30-80 words). Each pair goes,
by a hash of its index, to `dev` or `heldout` (about half each; tune on dev only), and by a
second hash to the registered half of its split or the other half:
  - positives: the paraphrase of a registered pair, checked against the registry that holds
    its original (category `paraphrase`);
  - negatives: the paraphrase of an unregistered pair, checked against the same registry,
    which holds no source of it (category `unrelated`): every pair is either one or the other
    (but for the few passages P4P holds twice, which are left out of the negatives).
Two shapes per split, in `<out>/<split>/<shape>/{sources,tests,truth.tsv}`:
  - `pairs`: one document per snippet, as the corpus gives them;
  - `docs`: consecutive pairs of the same half joined as paragraphs until the paraphrase
    side reaches 150 words (at most 350), both sides alike: a 150-350-word text revised by
    people throughout, the length of the short-answer sets. Filler from unrelated pairs is
    not used: it would turn the case into a partial copy (key_block), which the main set
    already measures, and dilute the very ratio the revisions are about.
The tokenized text is detokenized (`do n't` -> `don't`, ` ,` -> `,`, `` ` `` quotes -> `"`) and
common mojibake repaired (`Â£` -> `£`); all deterministic, no seed.
Usage: eval/make_p4p_set.py --data ~/.cache/cops/p4p --out /tmp/p4p
"""

import argparse
import hashlib
import os
import re
import shutil
import sys


def detokenize(s):
    s = s.strip()
    s = re.sub(r"``\s*", '"', s)
    s = re.sub(r"\s*''", '"', s)
    s = re.sub(r"\b(ca|wo|do|does|did|is|are|was|were|has|have|had|could|would|should|ai|need)"
               r" n't\b", r"\1n't", s)
    s = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", s)
    s = re.sub(r" ([,.;:!?%)\]}])", r"\1", s)
    s = re.sub(r"([(\[{$]) ", r"\1", s)
    s = re.sub(r"\s+", " ", s)
    return s


_MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d"
                       "\u017e\u0192\u02c6\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026"
                       "\u2030\u2039\u203a\u20ac\u2122]+")


def repair(s):
    """UTF-8 read as Windows-1252, back to UTF-8, where that decodes cleanly."""
    def fix(m):
        raw = bytearray()
        for ch in m.group(0):
            o = ord(ch)
            if 0x80 <= o <= 0x9f:  # bytes Windows-1252 leaves undefined come through as is
                raw.append(o)
                continue
            try:
                raw += ch.encode("cp1252")
            except UnicodeEncodeError:
                return m.group(0)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return m.group(0)
    return _MOJIBAKE.sub(fix, s)


def bit(tag, i, n):
    return hashlib.sha256(f"p4p:{tag}:{i}".encode()).digest()[0] % n


def write_set(path, sources, tests):
    """sources: [(name, text)]; tests: [(name, category, source name or '-', violation, text)]."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "sources"))
    os.makedirs(os.path.join(path, "tests"))
    for name, text in sources:
        with open(os.path.join(path, "sources", name), "w", encoding="utf-8") as f:
            f.write(text + "\n")
    with open(os.path.join(path, "truth.tsv"), "w", encoding="utf-8") as truth:
        truth.write("# test_file\tcategory\tsource_file\tviolation\n")
        for name, cat, src, viol, text in tests:
            with open(os.path.join(path, "tests", name), "w", encoding="utf-8") as f:
                f.write(text + "\n")
            truth.write(f"{name}\t{cat}\t{src}\t{viol}\n")
    with open(os.path.join(path, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write("corpus=p4p\n")


def runs8(s):
    w = re.findall(r"[a-z0-9]+", s.lower())
    return {tuple(w[k:k + 8]) for k in range(len(w) - 7)}


def words(s):
    return len(s.split())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(
        os.environ.get("COPS_DATA_DIR", os.path.expanduser("~/.cache/cops")), "p4p"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        with open(os.path.join(a.data, "p4p_reference.txt"), encoding="utf-8") as f:
            orig = f.read().split("\n")
        with open(os.path.join(a.data, "p4p_source.txt"), encoding="utf-8") as f:
            para = f.read().split("\n")
    except OSError as e:
        sys.exit(f"make_p4p_set: {e} (run eval/fetch_p4p.sh first)")
    orig = [detokenize(repair(s)) for s in orig if s.strip()]
    para = [detokenize(repair(s)) for s in para if s.strip()]
    if len(orig) != len(para):
        sys.exit(f"make_p4p_set: {len(orig)} originals but {len(para)} paraphrases")
    summary = []
    for split, want in (("dev", 0), ("heldout", 1)):
        idx = [i for i in range(len(orig)) if bit("split", i, 2) == want]
        reg = [i for i in idx if bit("registered", i, 2) == 0]
        # P4P holds a few passages twice (pairs 176/676, 281/753, 407/749 share 8-word runs):
        # a paraphrase of a registered passage is a copy, never a negative.
        reg_runs = set()
        for i in reg:
            reg_runs |= runs8(orig[i])
        unreg = [i for i in idx if bit("registered", i, 2) == 1 and
                 not (runs8(orig[i]) & reg_runs)]
        # pairs: one document per snippet.
        sources = [(f"s{i:04d}.txt", orig[i]) for i in reg]
        tests = [(f"t{i:04d}.txt", "paraphrase", f"s{i:04d}.txt", 1, para[i]) for i in reg]
        tests += [(f"t{i:04d}.txt", "unrelated", "-", 0, para[i]) for i in unreg]
        tests.sort()
        write_set(os.path.join(a.out, split, "pairs"), sources, tests)
        summary.append(f"{split}/pairs: {len(sources)} sources, {len(reg)} paraphrases, "
                       f"{len(unreg)} unrelated")

        # docs: consecutive pairs of one half until the paraphrases reach 150 words.
        def groups(members):
            out, cur = [], []
            for i in members:
                if cur and sum(words(para[j]) for j in cur) + words(para[i]) > 350:
                    out.append(cur)
                    cur = []
                cur.append(i)
                if sum(words(para[j]) for j in cur) >= 150:
                    out.append(cur)
                    cur = []
            if cur and sum(words(para[j]) for j in cur) >= 100:
                out.append(cur)  # a short last group still makes a document
            return out
        sources, tests = [], []
        for g in groups(reg):
            n = f"{g[0]:04d}"
            sources.append((f"s{n}.txt", "\n\n".join(orig[i] for i in g)))
            tests.append((f"t{n}.txt", "paraphrase", f"s{n}.txt", 1,
                          "\n\n".join(para[i] for i in g)))
        unrel = groups(unreg)
        for g in unrel:
            tests.append((f"t{g[0]:04d}.txt", "unrelated", "-", 0,
                          "\n\n".join(para[i] for i in g)))
        tests.sort()
        write_set(os.path.join(a.out, split, "docs"), sources, tests)
        summary.append(f"{split}/docs: {len(sources)} sources, {len(sources)} paraphrased "
                       f"documents, {len(unrel)} unrelated")
    print("make_p4p_set: " + "; ".join(summary))


if __name__ == "__main__":
    main()
