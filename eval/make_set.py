#!/usr/bin/env python3
"""Generates a COPS evaluation set from English prose that a Debian package ships.

Output (under --out):
  sources/   registered documents, one UTF-8 text file each (paragraphs split by blank lines)
  tests/     test documents derived from the sources in edit categories, plus unrelated ones
  truth.tsv  ground truth, one line per test document (format: docs/accuracy.md)
  corpus.txt one line naming the corpus, the seed and the sizes

Corpora (each a real body of prose, never random words):
  python-doc       the Python 3.11 documentation sources (Debian package python3.11-doc)
  debian-handbook  The Debian Administrator's Handbook, en-US (Debian package debian-handbook)
  licenses         /usr/share/common-licenses (always present; small, for smoke tests)
  dir:PATH         every *.txt file under PATH (paragraphs split by blank lines)

Everything is seeded: the same arguments give byte-identical output. Standard library only.
"""

import argparse
import glob
import html
import html.parser
import os
import random
import re
import sys

# ---------------------------------------------------------------------------------------
# Prose extraction

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]")


def _is_prose(text):
    words = text.split()
    if len(words) < 25:
        return False
    alpha = sum(1 for w in words if re.fullmatch(r"[(\"']?[A-Za-z][A-Za-z'\-]*[.,;:!?)\"']*", w))
    return alpha >= 0.8 * len(words)


def _clean_rst_inline(text):
    text = re.sub(r":[a-zA-Z:]+:`~?!?([^`<]*?)\s*(<[^>]*>)?`", r"\1", text)  # :role:`x <t>`
    text = re.sub(r"``([^`]*)``", r"\1", text)  # ``literal``
    text = re.sub(r"`([^`<]*?)\s*(<[^>]*>)?`_{1,2}", r"\1", text)  # `link <url>`_
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"\*([^*\s][^*]*)\*", r"\1", text)
    text = re.sub(r"\[#?[0-9]*\]_", "", text)  # footnote references
    text = text.replace("::", ":")
    return re.sub(r"\s+", " ", text).strip()


def _rst_paragraphs(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        blocks = re.split(r"\n\s*\n", f.read())
    out = []
    for block in blocks:
        lines = block.strip("\n").split("\n")
        if not lines or not lines[0].strip():
            continue
        first = lines[0]
        if first[:1].isspace() or first.lstrip().startswith(("..", ">>>", "+", "|", "*", "-", "#", "=")):
            continue
        if any(re.fullmatch(r"[=\-^~*#\"+`]{3,}", ln.strip()) for ln in lines):
            continue
        if any(ln[:1].isspace() for ln in lines[1:]):
            continue  # definition lists, option tables
        text = _clean_rst_inline(" ".join(ln.strip() for ln in lines))
        if _is_prose(text):
            out.append(text)
    return out


class _ParaCollector(html.parser.HTMLParser):
    """Collects the text of <div class="para"> elements (DocBook HTML), skipping <pre>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paras = []
        self._depth = 0  # nesting depth of div inside the current para
        self._pre = 0
        self._buf = []

    def handle_starttag(self, tag, attrs):
        if tag == "pre":
            self._pre += 1
        if tag == "div":
            if self._depth:
                self._depth += 1
            elif ("class", "para") in attrs:
                self._depth = 1
                self._buf = []

    def handle_endtag(self, tag):
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag == "div" and self._depth:
            self._depth -= 1
            if self._depth == 0:
                text = re.sub(r"\s+", " ", "".join(self._buf)).strip()
                if _is_prose(text):
                    self.paras.append(text)

    def handle_data(self, data):
        if self._depth and not self._pre:
            self._buf.append(data)


def _html_paragraphs(path):
    p = _ParaCollector()
    with open(path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    return p.paras


def _plain_paragraphs(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        blocks = re.split(r"\n\s*\n", f.read())
    out = []
    for block in blocks:
        text = re.sub(r"\s+", " ", block).strip()
        if _is_prose(text):
            out.append(text)
    return out


CORPORA = {
    "python-doc": ("python3.11-doc", "/usr/share/doc/python3.11/html/_sources", "**/*.rst.txt",
                   _rst_paragraphs),
    "debian-handbook": ("debian-handbook", "/usr/share/doc/debian-handbook/html/en-US", "*.html",
                        _html_paragraphs),
    "licenses": ("base-files", "/usr/share/common-licenses", "*", _plain_paragraphs),
}


def load_corpus(name):
    """Returns a list of files, each a list of prose paragraphs, in a stable order."""
    if name.startswith("dir:"):
        root, pattern, reader = name[4:], "**/*.txt", _plain_paragraphs
        package = None
    else:
        package, root, pattern, reader = CORPORA[name]
    paths = sorted(p for p in glob.glob(os.path.join(root, pattern), recursive=True)
                   if os.path.isfile(p) and not os.path.islink(p))
    if not paths:
        hint = f" (install the Debian package {package})" if package else ""
        sys.exit(f"make_set: no files for corpus {name} under {root}{hint}")
    files, seen = [], set()
    for p in paths:
        # Manuals repeat themselves (a "what's new" page restates a how-to, boilerplate
        # recurs). A paragraph sharing a tenth of its 8-word runs with text already kept
        # is dropped, so that an unrelated document never contains a copied passage.
        paras = []
        for para in reader(p):
            grams = _shingles(para)
            if grams and sum(g in seen for g in grams) >= 0.1 * len(grams):
                continue
            seen.update(grams)
            paras.append(para)
        if paras:
            files.append(paras)
    return files


def _shingles(text, k=8):
    words = [w.lower() for w in _WORD_RE.findall(text)]
    return {" ".join(words[i:i + k]) for i in range(len(words) - k + 1)}


def cut_documents(files, min_words, max_words):
    """Cuts the paragraph stream (files in order) into documents of min_words..max_words."""
    docs, cur, n = [], [], 0
    for paras in files:
        for para in paras:
            w = len(para.split())
            if n + w > max_words and n >= min_words:
                docs.append(cur)
                cur, n = [], 0
            cur.append(para)
            n += w
    if n >= min_words:
        docs.append(cur)
    return docs


# ---------------------------------------------------------------------------------------
# Edits. A document is a list of paragraphs; each edit returns a new list.

_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def words_of(doc):
    return sum(len(p.split()) for p in doc)


def _split_token(tok):
    m = re.fullmatch(r"([^A-Za-z]*)([A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z])([^A-Za-z]*)", tok)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def _map_words(doc, rng, fraction, fn):
    """Applies fn(word, rng) to a `fraction` of the alphabetic words, chosen uniformly."""
    slots = []
    toks = [p.split() for p in doc]
    for pi, ts in enumerate(toks):
        for ti, t in enumerate(ts):
            if _split_token(t):
                slots.append((pi, ti))
    n = round(fraction * len(slots))
    for pi, ti in rng.sample(slots, n):
        pre, word, post = _split_token(toks[pi][ti])
        toks[pi][ti] = pre + fn(word, rng) + post
    return [" ".join(ts) for ts in toks]


def substitute(doc, rng, fraction, vocab):
    def repl(word, r):
        while True:
            v = r.choice(vocab)
            if v.lower() != word.lower():
                return v.capitalize() if word[:1].isupper() else v
    return _map_words(doc, rng, fraction, repl)


def typo(word, rng):
    if len(word) < 3:
        return word + word[-1]
    i = rng.randrange(len(word) - 1)
    kind = rng.randrange(4)
    if kind == 0:  # swap two neighbours
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:  # drop a letter
        return word[:i] + word[i + 1:]
    if kind == 2:  # double a letter
        return word[:i] + word[i] + word[i:]
    near = "qwertyuiopasdfghjklzxcvbnm"
    c = near[(near.index(word[i].lower()) + 1) % 26] if word[i].lower() in near else "e"
    return word[:i] + c + word[i + 1:]


def minor_change(doc, rng, vocab):
    """Changes 2-5% of the words: substitutions, deletions and typos."""
    frac = rng.uniform(0.02, 0.05)

    def change(word, r):
        k = r.randrange(3)
        if k == 0:
            return r.choice(vocab)
        if k == 1:
            return typo(word, r)
        return ""  # deleted word (leaves its punctuation)
    out = _map_words(doc, rng, frac, change)
    return [re.sub(r"\s+", " ", p).strip() for p in out]


def pick_block(paras, rng, limit=200):
    """Indices of 1-3 consecutive paragraphs of fewer than `limit` words in total."""
    for _ in range(50):
        n = rng.randint(1, 3)
        if n > len(paras):
            continue
        s = rng.randrange(len(paras) - n + 1)
        if sum(len(p.split()) for p in paras[s:s + n]) < limit:
            return list(range(s, s + n))
    short = min(range(len(paras)), key=lambda i: len(paras[i].split()))
    return [short]


def block_added(doc, rng, filler):
    f = rng.choice(filler)
    idx = pick_block(f, rng)
    block = [f[i] for i in idx]
    pos = rng.randint(0, len(doc))
    return doc[:pos] + block + doc[pos:]


def block_deleted(doc, rng):
    idx = set(pick_block(doc[1:], rng))  # keep the first paragraph
    return [doc[0]] + [p for i, p in enumerate(doc[1:]) if i not in idx]


def key_block(doc, rng, filler):
    """One source paragraph (>= 40 words) among 2-4 paragraphs of unrelated text."""
    cands = [p for p in doc if 40 <= len(p.split()) <= 250] or doc
    key = rng.choice(cands)
    f = rng.choice(filler)
    n = min(len(f), rng.randint(2, 4))
    s = rng.randrange(len(f) - n + 1)
    others = f[s:s + n]
    pos = rng.randint(0, len(others))
    return others[:pos] + [key] + others[pos:]


def reorder(doc, rng):
    out = list(doc)
    while out == doc and len(doc) > 1:
        rng.shuffle(out)
    return out


def repeated(doc, rng):
    return doc * rng.randint(2, 3)


def sentence_shuffle(doc, rng):
    sents = [s for p in doc for s in _SENT_RE.split(p)]
    rng.shuffle(sents)
    out, i = [], 0
    while i < len(sents):
        n = rng.randint(3, 6)
        out.append(" ".join(sents[i:i + n]))
        i += n
    return out


_HOMOGLYPHS = {  # Latin letter -> look-alike Cyrillic or Greek letters
    "a": "\u0430", "e": "\u0435", "o": "\u043e\u03bf", "p": "\u0440", "c": "\u0441",
    "x": "\u0445", "i": "\u0456", "y": "\u0443", "A": "\u0410\u0391", "B": "\u0412\u0392",
    "E": "\u0415\u0395", "H": "\u041d\u0397", "K": "\u041a\u039a", "M": "\u041c\u039c",
    "O": "\u041e\u039f", "P": "\u0420\u03a1", "T": "\u0422\u03a4", "X": "\u0425\u03a7",
}


def homoglyphs(doc, rng):
    """Replaces every replaceable letter of 40% of the words by a Cyrillic/Greek look-alike."""
    def fn(word, r):
        return "".join(r.choice(_HOMOGLYPHS[c]) if c in _HOMOGLYPHS else c for c in word)
    return _map_words(doc, rng, 0.4, fn)


def invisible(doc, rng):
    """Zero-width characters and soft hyphens inside 40% of the words."""
    marks = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]

    def fn(word, r):
        if len(word) < 2:
            return word
        i = r.randrange(1, len(word))
        return word[:i] + r.choice(marks) + word[i:]
    return _map_words(doc, rng, 0.4, fn)


def spacing(doc, rng):
    """Extra whitespace (spaces, tabs, line breaks, no-break spaces) and punctuation."""
    out = []
    for p in doc:
        toks = p.split()
        buf = []
        for t in toks:
            buf.append(t)
            r = rng.random()
            if r < 0.15:
                buf.append(rng.choice(["  ", "\t", "\n", " \u00a0", "   "]))
            elif r < 0.22:
                buf.append(rng.choice([" -", " ,", " ;", " ...", " --", " \u2014"]))
            buf.append(" ")
        out.append("".join(buf).strip())
    return out


def vocabulary(files):
    counts = {}
    for paras in files:
        for p in paras:
            for w in _WORD_RE.findall(p):
                lw = w.lower()
                counts[lw] = counts.get(lw, 0) + 1
    return sorted(w for w, c in counts.items() if c >= 2 and len(w) >= 2)


# ---------------------------------------------------------------------------------------

CATEGORIES = [
    # name, violation expected
    ("exact", 1), ("minor_change", 1), ("block_added", 1), ("block_deleted", 1),
    ("key_block", 1), ("block_reordering", 1), ("repeated", 1),
    ("subst_05", 1), ("subst_10", 1), ("subst_20", 1), ("subst_30", 1),
    ("sentence_shuffle", 1), ("typos", 1), ("homoglyphs", 1), ("invisible_chars", 1),
    ("spacing_punct", 1),
]


def derive(category, doc, rng, filler, vocab):
    if category == "exact":
        return list(doc)
    if category == "minor_change":
        return minor_change(doc, rng, vocab)
    if category == "block_added":
        return block_added(doc, rng, filler)
    if category == "block_deleted":
        return block_deleted(doc, rng)
    if category == "key_block":
        return key_block(doc, rng, filler)
    if category == "block_reordering":
        return reorder(doc, rng)
    if category == "repeated":
        return repeated(doc, rng)
    if category.startswith("subst_"):
        return substitute(doc, rng, int(category[6:]) / 100.0, vocab)
    if category == "sentence_shuffle":
        return sentence_shuffle(doc, rng)
    if category == "typos":
        return _map_words(doc, rng, 0.04, typo)
    if category == "homoglyphs":
        return homoglyphs(doc, rng)
    if category == "invisible_chars":
        return invisible(doc, rng)
    if category == "spacing_punct":
        return spacing(doc, rng)
    raise ValueError(category)


def write_doc(path, paras):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n\n".join(paras) + "\n")


def write_sources(out, docs):
    """Writes docs as out/sources/s0001.txt, ...; returns their file names."""
    os.makedirs(os.path.join(out, "sources"), exist_ok=True)
    os.makedirs(os.path.join(out, "tests"), exist_ok=True)
    names = []
    for i, d in enumerate(docs):
        name = f"s{i + 1:04d}.txt"
        write_doc(os.path.join(out, "sources", name), d)
        names.append(name)
    return names


def write_tests(out, rows):
    """Writes (category, source file or "-", paragraphs) rows as out/tests/t0001.txt, ... and
    out/truth.tsv (format: docs/accuracy.md)."""
    with open(os.path.join(out, "truth.tsv"), "w", encoding="utf-8", newline="\n") as truth:
        truth.write("# test_file\tcategory\tsource_file\tviolation\n")
        for i, (cat, src, paras) in enumerate(rows):
            name = f"t{i + 1:04d}.txt"
            write_doc(os.path.join(out, "tests", name), paras)
            truth.write(f"{name}\t{cat}\t{src}\t{0 if src == '-' else 1}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True,
                    help="python-doc | debian-handbook | licenses | dir:PATH")
    ap.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sources", type=int, default=120, help="registered documents")
    ap.add_argument("--per-category", type=int, default=20, help="tests per edit category")
    ap.add_argument("--unrelated", type=int, default=300, help="unrelated (negative) tests")
    ap.add_argument("--min-words", type=int, default=800)
    ap.add_argument("--max-words", type=int, default=1600)
    ap.add_argument("--categories", default="",
                    help="comma-separated subset of categories (default: all)")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    files = load_corpus(args.corpus)
    vocab = vocabulary(files)
    docs = cut_documents(files, args.min_words, args.max_words)
    rng.shuffle(docs)
    n_filler = max(3, args.sources // 10)
    if len(docs) < args.sources + n_filler + 2:
        sys.exit(f"make_set: corpus {args.corpus} yields {len(docs)} documents of "
                 f"{args.min_words}-{args.max_words} words; need {args.sources + n_filler + 2}")
    sources = docs[:args.sources]
    # Filler text (for block added and key block) and unrelated negatives come from the
    # remaining documents, so they never overlap a source; negatives are shorter pieces.
    filler = docs[args.sources:args.sources + n_filler]
    negatives = cut_documents(docs[args.sources + n_filler:], args.min_words // 4,
                              args.max_words // 4)
    rng.shuffle(negatives)
    negatives = negatives[:args.unrelated]

    cats = [c for c, _ in CATEGORIES]
    if args.categories:
        wanted = args.categories.split(",")
        unknown = set(wanted) - set(cats)
        if unknown:
            sys.exit(f"make_set: unknown categories {sorted(unknown)}")
        cats = [c for c in cats if c in wanted]

    src_names = write_sources(args.out, sources)

    rows = []
    for cat in cats:
        for _ in range(args.per_category):
            si = rng.randrange(len(sources))
            rows.append((cat, src_names[si], derive(cat, sources[si], rng, filler, vocab)))
    for d in negatives:
        rows.append(("unrelated", "-", d))
    rng.shuffle(rows)  # test names reveal nothing about the category

    write_tests(args.out, rows)
    src_words = sum(words_of(d) for d in sources)
    with open(os.path.join(args.out, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write(f"corpus={args.corpus} seed={args.seed} sources={len(sources)} "
                f"source_words={src_words} tests={len(rows)} unrelated={len(negatives)}\n")
    print(f"make_set: {args.corpus}: {len(sources)} sources ({src_words} words), "
          f"{len(rows)} tests ({len(negatives)} unrelated) -> {args.out}")


if __name__ == "__main__":
    main()
