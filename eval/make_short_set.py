#!/usr/bin/env python3
"""Generates a COPS evaluation set of short documents revised by hand (simulated).

The user story: essay answers, abstracts and reviews of 150-400 words copied from a source
and then revised by a person: words replaced by synonyms, sentences split, merged, reordered
or dropped, a few words or a foreign sentence added.

Output (under --out), in the format of make_set.py (docs/accuracy.md, "Ground-truth format"):
  sources/   registered documents sNNNN.txt (consecutive paragraphs of one corpus file)
  tests/     revisions of sources and unrelated documents of the same topic, tNNNN.txt
  truth.tsv  ground truth, one line per test document
  corpus.txt one line naming the corpus, the seed and the sizes

Categories (median word 3-gram containment of a test in its source, share of the test's
word 3-grams found in the source, on debian-handbook and python-doc):
  light_revision        (violation 1) 20-25% of the content words (not stop words) replaced
                        by synonyms, a clause swap, 2-4 sentence edits (split, merge, phrase
                        deleted, connective added), half the time a sentence deleted, a few
                        phrases reworded and words inserted (containment about 0.62)
  moderate_revision     (violation 1) 35-55% of the content words replaced, phrases reworded
                        ("in order to" -> "to", "does not" -> "doesn't"), 5-18% of the
                        sentences deleted, sentences reordered, split, merged, turned around,
                        0-1 foreign sentence, a few of the word edits of heavy_revision
                        (containment about 0.35)
  heavy_revision        (violation 1) a thorough paraphrase: synonyms for all the content
                        words that have one, function-word phrases and connectives reworded
                        ("is able to" -> "can", "however" -> "but", "such as" -> "like"),
                        'you' -> 'we', adjectives and adverbs dropped, noun phrases reordered
                        ("the name of the file" -> "the file name", "A and B" -> "B and A"),
                        singular <-> plural, passives turned active, relative clauses reduced,
                        short words and phrases inserted, sentences turned around at a comma
                        or a because/when/if clause, 15-30% of the sentences deleted (code and
                        references first), the rest reordered, split and merged, 1-2 foreign
                        sentences added (from filler documents that no source overlaps);
                        strength varies (containment about 0.16, p10 0.11, max 0.3)
  unrelated_same_topic  (violation 0) text of the same corpus file (chapter, page) as some
                        source when there is enough, never sharing an 8-word run with a source

Corpora: those of make_set.py (python-doc, debian-handbook, licenses, dir:PATH). Synonyms come
from the MyThes English thesaurus (Debian package mythes-en-us); inflected forms of synonyms
are checked against /usr/share/dict/words (Debian package wamerican) when present; a short
list of synonyms for common words of technical prose fills in where the thesaurus has none.

Everything is seeded: the same arguments give byte-identical output. Standard library only.
"""

import argparse
import difflib
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_set  # noqa: E402  (prose extraction, document cutting, output helpers)

THESAURUS = "/usr/share/mythes/th_en_US_v2.dat"
DICT_WORDS = "/usr/share/dict/words"

STOP_WORDS = frozenset("""
a about above after again against all almost also although always am among an and another
any anyone anything are around as at be because been before being below between both but by
can cannot could did do does doing done down during each either else enough etc even ever
every few for from further get gets got had has have having he her here hers herself him
himself his how however i if in into is it its itself just least less let like many may me
might more most much must my myself need needs neither never no nor not now of off often on
once one only or other others otherwise our ours ourselves out over own per perhaps rather
same several shall she should since so some such than that the their theirs them themselves
then there therefore these they this those though through thus to too under until up upon us
very via was we well were what whatever when whenever where whether which while who whom
whose why will with within without would yet you your yours yourself yourselves
make makes made making use used uses using please
""".split())

# Synonyms a person would use for common words of technical prose that the thesaurus gives
# no fitting synonym for (by inflected form; used only where the thesaurus gives none).
_EXTRA_SYNONYMS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "useful": ("helpful", "handy"),
    "helpful": "useful", "automatically": ("by itself", "without intervention"),
    "install": "set up", "installs": "sets up", "installation": ("setup", "set-up"),
    "stored": ("kept", "saved"), "stores": ("keeps", "saves"), "storing": ("keeping", "saving"),
    "kept": ("stored", "retained"), "written": ("composed", "authored"),
    "include": "contain", "includes": "contains", "included": "contained",
    "existing": ("current", "present"), "long": "lengthy", "complex": "complicated",
    "complicated": "complex", "explicitly": "expressly", "tools": "utilities",
    "tool": "utility", "computer": "machine", "computers": "machines",
    "machines": "computers", "arbitrary": "any", "errors": "mistakes", "easier": "simpler",
    "simpler": "easier", "simplest": "easiest", "basic": ("elementary", "simple"),
    "built": ("constructed", "made"), "relevant": "pertinent", "avoid": "prevent",
    "avoids": "prevents", "avoided": "prevented", "currently": ("presently", "at the moment"),
    "empty": "blank", "together": "jointly", "sent": ("transmitted", "delivered"),
    "interesting": "intriguing", "easily": ("readily", "with ease"),
    "replaced": ("substituted", "superseded"), "replace": "substitute",
    "replaces": "substitutes", "faster": "quicker", "generic": "general",
    "enable": "activate", "enables": "activates", "enabled": "activated",
    "across": "throughout", "older": "earlier", "accessible": "reachable",
    "automatic": "automated", "major": "main", "manually": "by hand",
    "advantage": "benefit", "shown": "displayed", "fully": "completely",
    "exists": "is present", "ignored": "disregarded", "ignore": "disregard",
    "latest": ("newest", "most recent"), "frequently": "often", "selected": "chosen",
    "previously": "earlier", "documented": "described", "download": "fetch",
    "downloaded": "fetched", "requested": "asked for", "greater": "larger",
    "requirements": "needs", "careful": "cautious", "customize": ("tailor", "adjust"),
    "customized": ("tailored", "adjusted"), "flexible": "adaptable",
    "necessarily": "inevitably", "chosen": "picked", "widely": "broadly",
    "popular": ("common", "widespread"), "disabled": ("turned off", "deactivated"),
    "constructed": "built", "risk": "danger", "newer": "more recent",
    "visible": "seen", "rarely": "seldom", "higher": "greater", "larger": "bigger",
    "strict": "rigorous", "internally": "inside", "closed": "shut", "seen": "observed",
    "initially": "at first", "straightforward": "simple", "sufficient": "enough",
    "obvious": ("evident", "clear"), "critical": "crucial",
    "temporary": "transient", "explained": "described", "explains": "describes",
    "meant": "intended", "effectively": "in effect", "typical": ("common", "usual"),
    "traditional": ("conventional", "classic"), "relatively": ("comparatively", "fairly"),
    "specifically": "particularly", "impossible": "not possible",
    "regularly": "routinely", "combination": "mix", "protect": ("safeguard", "shield"),
    "safely": "securely", "personal": "private", "simultaneously": "at once",
    "expensive": "costly", "unchanged": "untouched", "overview": "summary",
    "numerous": "many", "occasionally": "at times", "rejected": ("refused", "declined"),
    "retrieved": ("fetched", "obtained"), "notably": "especially",
    "improved": ("better", "enhanced"), "fetch": "retrieve", "differ": "vary",
    "differs": "varies", "already": "by now", "quite": "fairly", "interactive": "live",
    "successful": "effective", "nice": "good", "convenience": "ease", "native": "built-in",
    "warning": "caution",
    "warnings": "cautions", "mechanism": "means",
    "mechanisms": "means", "modify": "alter", "modified": "altered", "modifies": "alters",
    "sometimes": "at times", "available": ("obtainable", "accessible"),
    "different": "distinct", "possible": "feasible", "simple": ("easy", "plain"),
    "specific": "particular", "particular": "specific", "common": ("frequent", "usual"),
    "directly": "straight", "added": ("appended", "included"), "similar": "comparable",
    "requires": "needs", "require": "need", "required": "needed", "requiring": "needing",
    "important": ("significant", "crucial"), "additional": ("extra", "further"),
    "necessary": ("required", "needed"), "general": "overall",
    "previous": ("earlier", "prior"), "changed": ("altered", "modified"),
    "changing": "altering", "actual": "real", "small": "little", "perform": "carry out",
    "performs": "carries out", "performed": "carried out", "determine": "establish",
    "determines": "establishes", "choose": ("pick", "select"), "chose": "picked",
    "describes": "explains", "describe": "explain", "described": "explained",
    "really": "truly", "send": "transmit", "sends": "transmits", "sending": "transmitting",
    "allowed": "permitted", "allow": "permit", "allows": "permits", "allowing": "permitting",
    "items": "entries", "designed": "intended", "related": ("associated", "connected"),
    "give": "provide", "gives": "provides", "giving": "providing", "happens": "occurs",
    "happen": "occur", "occurs": "happens", "occur": "happen", "produce": "generate",
    "produces": "generates", "produced": "generated", "prevent": "stop",
    "prevents": "stops", "desired": "wanted", "individual": ("single", "separate"),
    "immediately": ("instantly", "at once"), "completely": ("entirely", "fully"),
    "extra": "additional", "represent": "stand for", "represents": "stands for",
    "correctly": "properly", "properly": "correctly", "mentioned": "cited",
    "difficult": "hard", "understand": ("grasp", "comprehend"), "slightly": "a little",
    "recent": "new", "involves": "entails", "continue": "go on", "continues": "goes on",
    "commonly": "often", "significant": "considerable", "connect": "link",
    "connected": "linked", "unique": "distinct", "receive": "get", "receives": "gets",
    "retrieve": "fetch", "safe": "secure", "deleted": ("removed", "erased"),
    "delete": "remove", "deletes": "removes", "appears": "shows up", "appear": "show up",
    "guaranteed": "ensured", "quickly": ("rapidly", "fast"), "missing": ("absent", "lacking"),
    "checked": "verified", "decide": "determine", "learn": "find out",
    "proper": ("correct", "appropriate"), "removing": "deleting", "remove": "delete",
    "removes": "deletes", "removed": "deleted", "starting": "beginning",
    "needed": "required", "create": ("generate", "make"), "creates": ("generates", "makes"),
    "created": ("generated", "made"), "creating": ("generating", "making"),
    "contains": "holds", "contain": "hold", "containing": "holding", "add": "append",
    "adds": "appends", "adding": "appending", "find": "locate", "finds": "locates",
    "specify": "indicate", "specifies": "indicates", "specified": "indicated",
    "installed": "set up", "installing": "setting up", "executed": "run",
    "execute": "run", "executes": "runs", "features": "capabilities",
    "details": "specifics", "exactly": "precisely", "possibly": "perhaps",
    "problems": ("issues", "troubles"), "problem": "issue", "difference": "distinction",
    "steps": "stages",
}


# Part-of-speech cues from the previous word, to pick the thesaurus sense of the right kind.
_DETERMINERS = frozenset("the a an this that these those its their his her our your my each "
                         "every some any no another".split())
_PREPOSITIONS = frozenset("of in for with on at by from into about as without between "
                          "through during under over via per".split())
_VERB_CUES = frozenset("to can could will would should must may might does do did not "
                       "cannot it they we you he she who which".split())
_BE = frozenset("is are was were be been being".split())
_SUBJECTS = frozenset("the a an this that these those it its they their there we you he she "
                      "i each every all some many most both one such".split())
# Fixed phrases whose second word must stay: (previous word, word).
_IDIOMS = frozenset(tuple(p.split()) for p in [
    "in order", "into account", "in charge", "in case", "for example", "for instance",
    "in addition", "in fact", "in particular", "in general", "at least", "of course",
    "in turn", "in practice", "on top", "take place", "make sure", "in detail", "as well",
    "at once", "in short", "by default", "in time", "on behalf", "in place", "so far",
    "such as", "rather than", "more or", "first place", "at hand", "come across",
    "in mind", "bear in", "keep in", "the like", "all times", "at times", "once more",
    "the event", "the end", "at minimum", "time being", "in reality", "the remainder",
    "by hand", "no matter", "by itself", "at present", "these days", "at first",
    "take into", "take care", "take advantage", "take a", "a look", "make use", "no longer",
    "long as", "as long", "even though", "at all", "point of", "by means"])
_PARTICLES = frozenset("up out off down back away".split())
_SUBORDINATORS = ("If", "When", "Although", "Because", "Since", "While", "Unless", "Once",
                  "After", "Before", "Whenever", "Though")
_INTRO_PHRASES = ["In fact, ", "Moreover, ", "Clearly, ", "Of course, ", "Note that ",
                  "In practice, ", "Indeed, ", "Also, ", "Generally, ", "In general, ",
                  "As mentioned before, ", "In other words, ", "To put it simply, ",
                  "On top of that, ", "In this context, ", "For this reason, ",
                  "As a matter of fact, ", "Put differently, ", "Basically, ", "In short, ",
                  "Similarly, ", "As expected, ", "Naturally, ", "Keep in mind that ",
                  "It is worth noting that ", "Remember that ", "Interestingly, "]
_ADVERBS = ["usually", "often", "typically", "generally", "actually", "also", "normally"]
_TOKEN_RE = re.compile(r"""([("']*)([A-Za-z]+)([.,;:!?)"']*)""")


# ---------------------------------------------------------------------------------------
# Lexical resources


def load_thesaurus(path):
    """MyThes .dat: {headword: [(pos, [synonym, ...]), ...]} for single-word lowercase
    headwords; synonyms are single lowercase words, annotated entries are skipped."""
    if not os.path.exists(path):
        sys.exit(f"make_short_set: no thesaurus at {path} (install the Debian package "
                 "mythes-en-us)")
    thes = {}
    with open(path, "rb") as f:
        encoding = f.readline().decode("ascii").strip() or "UTF-8"
        lines = f.read().decode(encoding, errors="replace").split("\n")
    i, n = 0, len(lines)
    while i < n:
        head, _, count = lines[i].partition("|")
        i += 1
        try:
            k = int(count)
        except ValueError:
            continue
        meanings = []
        for line in lines[i:i + k]:
            fields = line.split("|")
            pos = fields[0].strip("()")
            syns = [s for s in fields[1:] if re.fullmatch(r"[a-z]+", s)]
            meanings.append((pos, syns))
        i += k
        if re.fullmatch(r"[a-z]+", head):
            thes[head] = meanings
    return thes


def load_dict_words(path=DICT_WORDS):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return {w.strip() for w in f if w.strip().islower()}
    except OSError:
        return None


def _similar(a, b):
    return a.startswith(b) or b.startswith(a) or \
        difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def _cue(prev):
    if prev in _DETERMINERS:
        return "det"
    if prev in _PREPOSITIONS:
        return "prep"
    if prev in _VERB_CUES:
        return "verb"
    if prev in _BE:
        return "be"
    return ""


# Parts of speech a word may have, by its inflection and the cue of the previous word.
_ALLOWED = {
    ("", ""): {"noun", "adj", "adv"}, ("s", ""): {"noun"}, ("ed", ""): {"verb", "adj"},
    ("ing", ""): {"verb", "adj", "noun"},
    ("", "det"): {"noun", "adj"}, ("s", "det"): {"noun"}, ("ed", "det"): {"adj"},
    ("ing", "det"): {"adj", "noun"},
    ("", "prep"): {"noun", "adj"}, ("s", "prep"): {"noun"}, ("ed", "prep"): {"adj"},
    ("ing", "prep"): {"verb", "noun"},
    ("", "verb"): {"verb", "adv"}, ("s", "verb"): {"verb"}, ("ed", "verb"): {"verb"},
    ("ing", "verb"): {"verb"},
    ("", "be"): {"adj", "adv"}, ("s", "be"): {"noun"}, ("ed", "be"): {"verb"},
    ("ing", "be"): {"verb"},
}


class Lexicon:
    def __init__(self, thes, words, files):
        self.thes, self.words = thes, words
        self.low, self.cap, self.bigrams = {}, {}, {}
        for paras in files:
            for p in paras:
                prev = ""
                for t in p.split():
                    m = _TOKEN_RE.fullmatch(t)
                    if not m:
                        prev = ""
                        continue
                    w = m.group(2)
                    lw = w.lower()
                    if w.islower():
                        self.low[lw] = self.low.get(lw, 0) + 1
                    elif w[0].isupper() and w[1:].islower():
                        self.cap[lw] = self.cap.get(lw, 0) + 1
                    if prev and not m.group(1):
                        self.bigrams[prev, lw] = self.bigrams.get((prev, lw), 0) + 1
                    prev = "" if m.group(3) else lw
        self._cache, self._pos_cache = {}, {}

    def ordinary(self, lw):
        """A common word rather than a name: seen lowercase at least as often as capitalised."""
        return self.low.get(lw, 0) >= max(1, self.cap.get(lw, 0))

    def term(self, a, b):
        """Whether 'a b' is a fixed term of the corpus ("standard library", "floating point"),
        which a person revising the text would keep."""
        if not a or not b or a in STOP_WORDS or b in STOP_WORDS:
            return False
        c = self.bigrams.get((a, b), 0)
        return c >= 3 and c >= 0.2 * min(self.low.get(a, 1), self.low.get(b, 1))

    def _inflect(self, syn, kind):
        if kind == "":
            return syn
        if self.words is None:
            return None
        cvc = re.search(r"[^aeiou][aeiou][bdgklmnprt]$", syn) is not None
        if kind == "s":
            if re.search(r"[^aeiou]y$", syn):
                forms = [syn[:-1] + "ies"]
            elif re.search(r"(s|x|z|ch|sh)$", syn):
                forms = [syn + "es"]
            else:
                forms = [syn + "s"]
        elif kind == "ed":
            if syn.endswith("e"):
                forms = [syn + "d"]
            elif re.search(r"[^aeiou]y$", syn):
                forms = [syn[:-1] + "ied"]
            else:
                forms = [syn + "ed"] + ([syn + syn[-1] + "ed"] if cvc else [])
        else:  # ing
            if syn.endswith("ie"):
                forms = [syn[:-2] + "ying"]
            elif syn.endswith("e") and not syn.endswith("ee"):
                forms = [syn[:-1] + "ing"]
            else:
                forms = [syn + "ing"] + ([syn + syn[-1] + "ing"] if cvc else [])
        for f in forms:
            if f in self.words:
                return f
        return None

    def _lemmas(self, w):
        """(lemma, inflection) readings of a lowercase word, the plain reading first."""
        out = [(w, "")]
        if w.endswith("ies"):
            out.append((w[:-3] + "y", "s"))
        if w.endswith("es"):
            out.append((w[:-2], "s"))
        if w.endswith("s") and not w.endswith("ss"):
            out.append((w[:-1], "s"))
        if w.endswith("ied"):
            out.append((w[:-3] + "y", "ed"))
        if w.endswith("ed"):
            out += [(w[:-1], "ed"), (w[:-2], "ed")]
            if len(w) > 4 and w[-3] == w[-4]:
                out.append((w[:-3], "ed"))
        if w.endswith("ing") and len(w) > 5:
            out += [(w[:-3], "ing"), (w[:-3] + "e", "ing")]
            if w[-4] == w[-5]:
                out.append((w[:-4], "ing"))
        return out

    def pos(self, w):
        """{part of speech: number of thesaurus senses} of the lowercase word w, for its
        first reading (plain, then as an inflected form) that the thesaurus knows."""
        if w in self._pos_cache:
            return self._pos_cache[w]
        out = {}
        for lemma, kind in self._lemmas(w):
            for p, _ in self.thes.get(lemma, ()):
                if kind == "s" and p not in ("noun", "verb") or \
                        kind in ("ed", "ing") and p not in ("verb", "adj", "noun"):
                    continue
                out[p] = out.get(p, 0) + 1
            if out:
                break
        self._pos_cache[w] = out
        return out

    def is_pos(self, w, pos, share=1.0):
        """Whether at least `share` of the senses of w are of the part of speech pos."""
        c = self.pos(w)
        return bool(c) and c.get(pos, 0) >= share * sum(c.values())

    def plural(self, w):
        """(singular, plural) of the noun w when both are words, else None."""
        if self.words is None or w not in self.words:
            return None
        if w.endswith("s") and not w.endswith("ss"):
            for lemma, kind in self._lemmas(w)[1:]:
                if kind == "s" and lemma in self.words and self._inflect(lemma, "s") == w:
                    return lemma, w
            return None
        pl = self._inflect(w, "s")
        return (w, pl) if pl else None

    def synonyms(self, w, cue):
        """Synonyms (already inflected like w) of the lowercase word w after a word of the
        given cue (see _cue).

        Of the senses the thesaurus lists for w (for the parts of speech its ending and the
        cue allow), the one whose synonyms the corpus uses most is taken, so that a technical
        word gets its technical sense; only synonyms that the corpus itself uses are offered,
        so that they read naturally in context. Common words of technical prose that get
        no synonym that way get those of _EXTRA_SYNONYMS."""
        key = (w, cue)
        if key in self._cache:
            return self._cache[key]
        best, best_score = [], 1
        for lemma, kind in self._lemmas(w):
            meanings = self.thes.get(lemma)
            if not meanings:
                continue
            allowed = _ALLOWED[kind, cue]
            for pos, syns in meanings:
                if pos not in allowed:
                    continue
                cands = []
                for s in syns:
                    if s == lemma or _similar(s, lemma) or s in STOP_WORDS:
                        continue
                    if pos == "adv" and lemma.endswith("ly") and not s.endswith("ly"):
                        continue  # 'naturally' -> 'course' (of 'of course'): a fragment
                    if self.words is not None and s not in self.words:
                        continue
                    f = self._inflect(s, kind)
                    if f and f != w and f not in cands and \
                            self.low.get(f, 0) + self.low.get(s, 0) >= 2:
                        cands.append(f)
                score = max((self.low.get(f, 0) for f in cands), default=0)
                if cands and score > best_score:
                    best, best_score = cands, score
        if not best and w in _EXTRA_SYNONYMS:
            extra = _EXTRA_SYNONYMS[w]
            best = list(extra) if isinstance(extra, tuple) else [extra]
        self._cache[key] = best
        return best


# ---------------------------------------------------------------------------------------
# Synonym substitution


def _is_content(word):
    return len(word) >= 3 and word.lower() not in STOP_WORDS


def substitute_synonyms(doc, rng, fraction, lex):
    """Replaces `fraction` of the content words of doc (those with a synonym at least) by
    synonyms; the same word in the same role is always replaced by the same synonym."""
    toks = [p.split() for p in doc]
    content, slots = 0, []
    for pi, ts in enumerate(toks):
        ms = [_TOKEN_RE.fullmatch(t) for t in ts]
        for ti, m in enumerate(ms):
            if not m or not _is_content(m.group(2)):
                continue
            content += 1
            word = m.group(2)
            lw = word.lower()
            pm = ms[ti - 1] if ti > 0 else None
            prev = pm.group(2).lower() if pm and not pm.group(3) and not m.group(1) else ""
            nm = ms[ti + 1] if ti + 1 < len(ms) else None
            nxt = nm.group(2).lower() if nm and not m.group(3) and not nm.group(1) else ""
            sentence_start = ti == 0 or ts[ti - 1][-1:] in ".!?:"
            if (prev, lw) in _IDIOMS or (lw, nxt) in _IDIOMS or nxt in _PARTICLES:
                continue  # fixed phrase or phrasal verb
            if lex.term(prev, lw) and lex.ordinary(prev) or \
                    lex.term(lw, nxt) and lex.ordinary(nxt):
                continue  # technical term (a name next to a word does not make one)
            name_follows = nm is not None and not m.group(3) and nm.group(2)[:1].isupper()
            if not (word.islower() or (sentence_start and word[0].isupper() and
                                       word[1:].islower() and not name_follows)):
                continue  # a name, an acronym ('Argument Clinic' opening a sentence too)
            cue = _cue(prev)
            if not cue and nxt in _DETERMINERS and lw.endswith(("s", "ed")):
                cue = "verb"  # "X requires a", "Y stored the": a verb, not a noun
            if lex.ordinary(lw) and lex.synonyms(lw, cue):
                slots.append((pi, ti, cue))
    n = min(len(slots), round(fraction * content))
    chosen = {}
    for pi, ti, cue in sorted(rng.sample(slots, n)):
        pre, word, post = _TOKEN_RE.fullmatch(toks[pi][ti]).groups()
        key = (word.lower(), cue)
        if key not in chosen:
            chosen[key] = rng.choice(lex.synonyms(word.lower(), cue))
        syn = chosen[key]
        if word[0].isupper():
            syn = syn[0].upper() + syn[1:]
        toks[pi][ti] = pre + syn + post
        if ti > 0 and not pre and toks[pi][ti - 1] in ("a", "an", "A", "An"):
            art = "an" if syn[0].lower() in "aeiou" else "a"
            toks[pi][ti - 1] = _cap(art) if toks[pi][ti - 1][0] == "A" else art
    return [" ".join(ts) for ts in toks]


# ---------------------------------------------------------------------------------------
# Sentence edits. A document here is a list of paragraphs, each a list of sentences; every
# edit changes it in place and returns True when it applied.


def sentences(doc):
    return [make_set._SENT_RE.split(p) for p in doc]


def join(doc):
    return [" ".join(s) for s in doc if s]


def _cap(text):
    return text[:1].upper() + text[1:]


def _decap(text, lex):
    """Lowercases the first word of text unless it is a name, an acronym or 'I'."""
    m = re.match(r"[A-Za-z]+(?=[\s,.;:!?)]|$)", text)
    if not m:
        return text
    w = m.group(0)
    lw = w.lower()
    if w == "A" or w[0].isupper() and w[1:].islower() and (
            lex.ordinary(lw) or lw in STOP_WORDS or lw in _PHRASE_STARTS or
            lw.endswith("ly") or lw in ("note", "additionally")):
        return text[0].lower() + text[1:]
    return text


def _nwords(text):
    return len(text.split())


def _pick(rng, cands):
    return rng.choice(cands) if cands else None


def _replace_picked(rng, cands, doc, done=None):
    """Puts the new text of one random (paragraph, sentence, text) candidate in place;
    False when there is none. `done` collects the sentences written."""
    c = _pick(rng, cands)
    if not c:
        return False
    pi, si, s = c
    doc[pi][si] = s
    if done is not None:
        done.add(s)
    return True


def _top_level_matches(pattern, s):
    """Matches of pattern in s outside parentheses and quotes."""
    out = []
    for m in re.finditer(pattern, s):
        before = s[:m.start()]
        if before.count("(") == before.count(")") and before.count('"') % 2 == 0:
            out.append(m)
    return out


_SINGULAR = frozenset("is was has can will may might must should would could does".split())


def _balanced(text):
    return text.count("(") == text.count(")") and text.count('"') % 2 == 0 and \
        text.count("\u201c") == text.count("\u201d")


_SPLIT_AT = [(r"; ", "", False), (r", and ", "", True), (r", but ", "But ", True),
             (r", so ", "So ", True), (r", which ", "This ", False),
             (r", because ", "This is because ", False)]


def split_sentence(doc, rng, lex):
    cands = []
    for pi, sents in enumerate(doc):
        for si, s in enumerate(sents):
            if not s.endswith((".", "!", "?")):
                continue
            for pat, lead, needs_subject in _SPLIT_AT:
                for m in _top_level_matches(pat, s):
                    a, b = s[:m.start()], s[m.end():]
                    first = b.split()[0] if b.split() else ""
                    if needs_subject and not (first.lower() in _SUBJECTS or
                                              first[:1].isupper()):
                        continue  # "X, and can Y": the second part has no subject
                    if lead == "This " and not (first.endswith("s") or first in _SINGULAR):
                        continue  # "tools, which share": "This share" would not agree
                    if not (_balanced(a) and _balanced(b)):
                        continue
                    if _nwords(a) >= 5 and _nwords(b) >= 5 and a[-1:].isalnum():
                        cands.append((pi, si, a, b, lead))
    c = _pick(rng, cands)
    if not c:
        return False
    pi, si, a, b, lead = c
    second = lead + _decap(b, lex) if lead else _cap(b)
    doc[pi][si:si + 1] = [a + ".", second]
    return True


def merge_sentences(doc, rng, lex):
    cands = [(pi, si) for pi, sents in enumerate(doc) for si in range(len(sents) - 1)
             if sents[si].endswith(".") and sents[si][-2:-1].isalnum() and
             sents[si + 1][-1:] in ".!?" and
             _nwords(sents[si]) + _nwords(sents[si + 1]) <= 45]
    c = _pick(rng, cands)
    if not c:
        return False
    pi, si = c
    a, b = doc[pi][si], doc[pi][si + 1]
    connective = b.split()[0].lower().strip(",") in _PHRASE_STARTS or re.match(r"\w+,", b)
    glue = "; " if connective else rng.choice([", and ", "; "])
    doc[pi][si:si + 2] = [a[:-1] + glue + _decap(b, lex)]
    return True


_PHRASE_STARTS = frozenset("""for however of in as which who whose where such including thus
therefore by with without unlike like especially particularly typically usually often also
that otherwise likewise finally instead then now here again still yet moreover furthermore
indeed first second third next consequently""".split())


def _parenthetical(phrase):
    """Whether a phrase between commas is a parenthetical, which can go."""
    w = phrase.split()[0].lower().strip("\"'(")
    return w in _PHRASE_STARTS or w.endswith("ly") or w in ("e.g.", "i.e.")


def delete_phrase(doc, rng, lex):
    """Deletes a parenthesis, a phrase between commas or an introductory phrase."""
    cands = []
    for pi, sents in enumerate(doc):
        for si, s in enumerate(sents):
            for m in re.finditer(r" \([^()]*\)", s):
                if _nwords(m.group(0)) <= 12:
                    cands.append((pi, si, s[:m.start()] + s[m.end():]))
            commas = [m.start() for m in _top_level_matches(r", ", s)]
            if re.search(r", (and|or) ", s) or len(commas) > 3:
                continue  # likely a list: deleting one of its items breaks it
            for a, b in zip(commas, commas[1:]):
                inner = s[a + 2:b]
                if 2 <= _nwords(inner) <= 8 and _parenthetical(inner):
                    cands.append((pi, si, s[:a] + s[b + 1:]))
            if commas:
                head, rest = s[:commas[0]], s[commas[0] + 2:]
                if 1 <= _nwords(head) <= 4 and _nwords(rest) >= 5 and _parenthetical(head) \
                        and not head.startswith(_SUBORDINATORS):
                    cands.append((pi, si, _cap(rest)))
    return _replace_picked(rng, [(pi, si, re.sub(r"\s+", " ", s).strip()) for pi, si, s in cands],
                           doc)


def insert_words(doc, rng, lex):
    """A connective at the start of a sentence, or an adverb after is/are."""
    cands = []
    for pi, sents in enumerate(doc):
        for si, s in enumerate(sents):
            if si > 0 and re.match(r"[A-Z][a-z]+ ", s):
                cands.append((pi, si, rng.choice(_INTRO_PHRASES) + _decap(s, lex)))
            for m in re.finditer(r" (is|are) (?=[a-z])", s):
                adv = rng.choice(_ADVERBS)
                cands.append((pi, si, s[:m.end()] + adv + " " + s[m.end():]))
    return _replace_picked(rng, cands, doc)


_NOT_BEFORE_SUB = frozenset("even only as and or than but just especially except right "
                            "long soon".split())


def swap_clauses(doc, rng, lex, done=None):
    """'If X, Y.' <-> 'Y if X.' (also when, because, unless, ...). Sentences in the set
    `done` (results of earlier swaps) are left alone; the result is added to it."""
    cands = []
    for pi, sents in enumerate(doc):
        for si, s in enumerate(sents):
            end = s[-1:]
            if end != "." or (done is not None and s in done) or re.search(r"[:;?]", s[:-1]):
                continue
            body = s[:-1]
            if body.startswith(_SUBORDINATORS):
                commas = _top_level_matches(r", ", body)
                if commas:
                    m = commas[0]
                    sub, main = body[:m.start()], body[m.end():]
                    main = re.sub(r"^then ", "", main)
                    if re.match(r"(and|or|but) ", main):
                        continue  # 'If A, and B, C': the comma is not the clause's end
                    if _nwords(main) >= 4 and _nwords(sub) >= 3 and _balanced(main):
                        out = _cap(main) + " " + sub[0].lower() + sub[1:] + end
                        cands.append((pi, si, out))
            else:
                for m in re.finditer(r" (if|when|because|unless|since|once|before|after) ",
                                     body):
                    main, sub = body[:m.start()].rstrip(","), body[m.start() + 1:]
                    if re.match(r"[A-Z]\w*( \w+)?,", main):
                        continue  # 'Additionally, X since Y': the connective must lead
                    if _nwords(main) >= 4 and _nwords(sub) >= 4 and "," not in sub and \
                            main[-1:].isalnum() and _balanced(main) and _balanced(sub) and \
                            main.split()[-1].lower() not in _NOT_BEFORE_SUB:
                        out = _cap(sub) + ", " + _decap(main, lex) + end
                        cands.append((pi, si, out))
    return _replace_picked(rng, cands, doc, done)


_CODE_TOKEN_RE = re.compile(r"[/_=<>{}\[\]@\\|#$%&*~^]|\w\.\w|\w\(|\d|^\W*[A-Z0-9]{2,}\W*$|"
                            r"^\W*[a-z]+[A-Z]")


def _code_tokens(text):
    """Tokens of text that look like code, paths, addresses, numbers or acronyms."""
    return sum(1 for t in text.split() if _CODE_TOKEN_RE.search(t))


def delete_sentence(doc, rng, lex, technical=False):
    """Deletes a sentence (not the only one of its paragraph); with `technical`, one full
    of code, paths, addresses or acronyms more likely, as a person shortening a text
    drops references and examples first."""
    cands = [(pi, si) for pi, sents in enumerate(doc) if len(sents) > 1
             for si in range(len(sents)) if _balanced(sents[si])]
    if not cands:
        return False
    if technical:
        c = rng.choices(cands, [1 + 5 * _code_tokens(doc[pi][si]) for pi, si in cands])[0]
    else:
        c = rng.choice(cands)
    del doc[c[0]][c[1]]
    return True


def reorder_sentences(doc, rng, lex, p=0.6):
    """Shuffles the sentences of each paragraph of 2+ sentences with probability p."""
    done = False
    for sents in doc:
        if len(sents) > 1 and rng.random() < p:
            old = list(sents)
            while sents == old:
                rng.shuffle(sents)
            done = True
    return done


def insert_foreign(doc, rng, filler_sents, long=False):
    """Inserts a sentence of another document (with `long`, one of 18 words or more)."""
    pool = [f for f in filler_sents if _nwords(f) >= 18] if long else []
    pi = rng.randrange(len(doc))
    doc[pi].insert(rng.randint(0, len(doc[pi])), rng.choice(pool or filler_sents))


# Rewordings a person revising a text commonly makes: function-word phrases, connectives,
# adverbs and contractions. A tuple offers alternatives (one is picked at random).
_REWORDINGS = {
    "in order to": "to", "so as to": "to", "is able to": "can", "are able to": "can",
    "it is possible to": "one can", "it is necessary to": "one must",
    "it is recommended to": "one should", "a number of": "several", "a lot of": "many",
    "lots of": "many", "such as": ("like", "for instance"), "as well as": "and",
    "for example": ("for instance", "e.g."), "for instance": "for example",
    "therefore": ("hence", "so", "thus"), "thus": ("so", "hence"), "hence": ("so", "thus"),
    "however": ("but", "still", "yet"), "in addition": ("additionally", "moreover"),
    "make sure": "ensure", "ensure": "make sure", "allows you to": "lets you",
    "allow you to": "let you", "instead of": "rather than", "rather than": "instead of",
    "at the same time": "simultaneously", "in most cases": "usually", "as soon as": "once",
    "due to": "because of", "because of": "owing to", "prior to": "before",
    "in case of": "in the event of", "you need to": ("you must", "one must"),
    "you have to": ("you must", "one has to"), "you can": ("one can", "you may"),
    "you must": ("one must", "you have to"), "you should": ("one should", "it is best to"),
    "you will": ("one will", "you'll"), "you may": ("one may", "you might"),
    "you want to": ("one wishes to", "you wish to"), "in the same way": "likewise",
    "with respect to": "regarding", "in particular": "particularly",
    "particularly": "especially", "especially": "particularly", "the majority of": "most",
    "all of the": "all the", "because": ("since", "as"), "several": ("a few", "various"),
    "various": ("several", "different"), "multiple": ("several", "many"),
    "many": ("numerous", "a lot of"), "also": "additionally",
    "usually": ("normally", "generally", "typically"), "often": ("frequently", "commonly"),
    "always": ("invariably", "at all times"), "sometimes": ("at times", "occasionally"),
    "generally": ("in general", "usually"), "typically": ("usually", "normally"),
    "mostly": ("mainly", "largely"), "normally": "usually", "only": ("just", "merely"),
    "just": ("simply", "merely"), "simply": ("just", "merely"),
    "very": ("really", "quite", "extremely"), "quite": ("fairly", "rather"),
    "almost": "nearly", "nearly": "almost", "again": "once more",
    "finally": ("lastly", "in the end"), "moreover": "furthermore",
    "furthermore": "moreover", "indeed": "in fact", "in fact": ("actually", "indeed"),
    "actually": ("in fact", "really"), "of course": "naturally", "in general": "generally",
    "in detail": "thoroughly", "for this reason": ("so", "that is why"),
    "in this case": ("here", "then"), "at least": "at minimum",
    "although": ("though", "even though"), "though": "although",
    "even though": "although", "whereas": "while", "unless": "except if",
    "whether": "if", "until": "till", "within": "inside", "via": "through",
    "through": "via", "about the": ("regarding the", "concerning the"),
    "about how": "on how", "among": "amongst", "upon": "on", "as long as": "provided",
    "so that": "so", "likewise": "similarly", "similarly": "likewise", "each": "every",
    "there is": ("there's", "we have"), "there are": ("there exist", "we have"),
    "can be": "may be", "could be": "might be", "is used to": "serves to",
    "are used to": "serve to", "to use": ("to employ", "to utilize"),
    "can use": ("can employ", "can utilize"), "uses": "employs",
    "using": ("employing", "utilizing"), "it is": "it's", "do not": "don't",
    "does not": "doesn't", "is not": "isn't", "cannot": "can't", "are not": "aren't",
    "will not": "won't", "would not": "wouldn't", "should not": "shouldn't",
    "has not": "hasn't", "have not": "haven't", "was not": "wasn't", "it's": "it is",
    "don't": "do not", "doesn't": "does not", "there's": "there is", "you're": "you are",
    "can't": "cannot", "has been": "was", "have been": "were", "if": ("when", "in case"),
    "when": ("whenever", "once", "if"), "the same as": "identical to",
    "is the same": "is identical", "are the same": "are identical",
    "the same": ("an identical", "the identical"), "be used to": "serve to",
    "be used for": "serve for", "be used": ("be employed", "be utilized"),
    "is used": ("is employed", "is utilized"), "are used": ("are employed", "are utilized"),
    "was used": "was employed", "were used": "were employed", "been used": "been employed",
    "one of the": "among the", "need to be": "must be", "needs to be": "must be",
    "note that": ("notice that", "keep in mind that", "bear in mind that"),
    "take a look at": ("look at", "examine"), "and so on": ("etc.", "and the like"),
    "on the other hand": "conversely", "as opposed to": "rather than",
    "in this section": ("here", "in this part"), "the use of": "using", "here is": "this is",
    "as well": "too", "in other words": "that is", "means that": "means",
    "shows that": "shows", "ensures that": "ensures", "ensure that": "ensure",
    "states that": "states", "says that": "says", "know that": "know",
    "think that": "think", "assumes that": "assumes", "it will": "it'll",
    "they will": "they'll", "we will": "we'll", "they are": "they're", "we are": "we're",
    "they have": "they've", "we have": "we've", "that is": "that's", "what is": "what's",
    "which": "that", "it": "this", "should": "ought to", "may": "might", "might": "may",
    "but": "yet", "now": ("at present", "these days"), "while": ("whilst", "whereas"),
    "a few": ("some", "several"), "a bit": "slightly", "in the case of": "for",
    "as a result": "consequently", "as a consequence": "consequently",
    "in practice": ("in reality", "practically"), "at the moment": "currently",
    "for now": "for the time being", "in any case": "anyway", "even if": "even when",
    "it is important to": "one should", "it is useful to": "it helps to",
    "it is a good idea to": "it is wise to", "known as": "called",
    "refers to": ("denotes", "means"), "refer to": ("denote", "mean"),
    "consists of": ("comprises", "is made up of"), "consist of": ("comprise", "are made up of"),
    "depends on": "relies on", "depend on": "rely on", "deals with": "handles",
    "deal with": "handle", "is responsible for": "takes care of",
    "are responsible for": "take care of", "takes care of": "handles",
    "take care of": "handle", "set up": "configure", "find out": ("discover", "learn"),
    "figure out": "work out", "look at": "examine", "look for": "search for",
    "carry out": "perform", "get rid of": "remove", "make use of": "use",
    "keep track of": "track", "a variety of": "various", "the rest of": "the remainder of",
    "more than": "over", "less than": "under", "in terms of": "regarding",
    "according to": ("as per", "following"), "apart from": "besides",
    "except for": "apart from", "along with": "together with",
    "together with": "along with", "as part of": "within", "by means of": ("using", "via"),
    "thanks to": "owing to", "despite": "in spite of", "in spite of": "despite",
    "whether or not": "whether",
}
# Words after which, or before which, a rewording does not fit ("how many", "the only",
# "each other", "whether or not").
_REWORD_NOT_AFTER = {
    "many": {"how", "so", "as", "too", "very"}, "only": {"the", "an", "its", "their", "your",
                                                         "his", "her", "our", "my", "not"},
    "just": {"the", "a"}, "very": {"the", "this", "that"}, "also": {"but", "and"},
    "through": {"go", "goes", "went", "going", "gone", "walk", "walks", "run", "runs",
                "read", "reads", "iterate", "iterates", "loop", "loops"},
    "using": {"by", "of", "when", "before", "after", "for", "about", "from", "avoid",
              "avoids", "start", "starts", "stop", "stops", "without", "in", "is", "are"},
    "uses": {"the", "its", "many", "all", "other", "several", "some", "these", "those",
             "of", "different", "common", "possible", "various", "such"},
    "it is": {"as", "that", "what", "whether", "if"}, "there is": {"whether", "if"},
    "there are": {"whether", "if"},
    "if": {"as", "even", "only", "check", "checks", "checking", "see", "sees", "know",
           "knows", "test", "tests", "determine", "determines", "ask", "asks", "find",
           "tell", "tells", "matter", "wonder", "decide", "decides", "whether", "what",
           "and", "or", "than", "but"},
    "one of the": {"only", "any", "each", "every", "is", "as", "no"},
    "but": {"not", "all", "anything", "nothing", "everything", "last", "none", "any"},
    "now": {"right", "for", "until", "from", "by", "till", "just"},
    "may": {"you", "we", "i"},
    "look at": {"a", "quick", "closer", "close", "first", "the", "brief"},
    "set up": {"be", "is", "are", "was", "were", "been", "being", "get", "gets", "got", "a",
               "the", "this", "an", "your", "our", "its"},
    "more than": {"no", "nothing", "much", "far", "even", "little"},
    "less than": {"no", "much", "far", "even"}, "known as": {"well", "what"},
    "need to be": {"not", "to", "don't", "doesn't", "will", "would", "may", "might", "no",
                   "the", "a", "an"},
    "needs to be": {"not", "to", "will", "would", "may", "might", "no"},
    "as well": {"just", "might", "may", "could", "would"},
    "the use of": {"by", "with", "in", "of", "on", "for", "to", "and", "or"},
    "when": {"even", "only", "except", "know", "knows", "see", "check", "decide",
             "decides", "determine", "determines", "and", "or", "than", "but", "time",
             "times", "case", "cases", "moment", "point"},
}
_REWORD_NOT_BEFORE = {"each": {"other"}, "whether": {"or"}, "within": {"a", "an"},
                      "if": {"any", "not", "so", "necessary", "needed", "possible",
                             "required", "desired", "present", "available", "given",
                             "specified", "omitted", "true", "false", "set", "none"},
                      "when": {"to"},
                      "also": {"be", "been"}, "as well": {"as"}, "should": {"not"},
                      "but": {"also", "not", "rather", "only", "even"},
                      "now": {"that", "on"}, "more than": {"one"}, "less than": {"one"},
                      "there is": {"a", "an"}}
_REWORDING_RE = re.compile(
    r"\b(" + "|".join(re.escape(k) for k in sorted(_REWORDINGS, key=len, reverse=True))
    + r")\b(?! of\b)", re.IGNORECASE)


def _word_before(s, i):
    m = re.search(r"([A-Za-z']+)\W*$", s[:i])
    return m.group(1).lower() if m else ""


_REWORD_BEFORE_NOUN = frozenset(["the same"])
_REWORD_AFTER_NOUN = frozenset(["which"])  # 'the file which' -> 'the file that', not ', which'
_REWORD_CAPITAL = frozenset(["it"])  # only 'It' opening a sentence -> 'This'
_REWORD_NOT_BEFORE.update({"that is": {"to", "not", "a", "an", "the", "used", "why"},
                           "we have": {"to", "been", "no"}, "they have": {"to", "been"}})


def reword(doc, rng, p, lex):
    """Applies each common rewording found in the text with probability p."""
    def fn(m):
        text, s = m.group(0), m.string
        key = text.lower()
        after = re.match(r"\s+([A-Za-z']+)", s[m.end():])
        nxt = after.group(1).lower() if after else ""
        if rng.random() >= p or _word_before(s, m.start()) in _REWORD_NOT_AFTER.get(key, ()) \
                or nxt in _REWORD_NOT_BEFORE.get(key, ()) or \
                key in _REWORD_BEFORE_NOUN and not (nxt and not s[m.end():].startswith((",", "."))
                                                    and lex.is_pos(nxt, "noun", 0.6)) or \
                key in _REWORD_AFTER_NOUN and not (
                    re.search(r"[a-z] $", s[:m.start()]) and
                    _word_before(s, m.start()) not in STOP_WORDS and
                    lex.is_pos(_word_before(s, m.start()), "noun", 0.6)) or \
                key in _REWORD_CAPITAL and not (text[0].isupper() and
                                                re.search(r"(^|[.!?] )$", s[:m.start()])):
            return text
        b = _REWORDINGS[key]
        if isinstance(b, tuple):
            b = rng.choice(b)
        return _cap(b) if text[:1].isupper() else b
    for sents in doc:
        for si, s in enumerate(sents):
            sents[si] = _REWORDING_RE.sub(fn, s)


def turn_around(doc, rng, lex, done=None):
    """Moves a phrase across the sentence: an introductory phrase to the end ('In most
    cases, X.' -> 'X in most cases.') or a closing prepositional phrase to the front
    ('X is kept in /etc.' -> 'In /etc, X is kept.')."""
    cands = []
    for pi, sents in enumerate(doc):
        for si, s in enumerate(sents):
            end = s[-1:]
            if end != "." or (done is not None and s in done) or not _balanced(s) or \
                    re.search(r"[:;?]", s[:-1]):
                continue
            body = s[:-1]
            commas = _top_level_matches(r", ", body)
            first = body.split()[0] if body.split() else ""
            if commas and first.lower() in _FRONT_PREPS and not body.startswith(_SUBORDINATORS):
                head, rest = body[:commas[0].start()], body[commas[0].end():]
                if 2 <= _nwords(head) <= 7 and _nwords(rest) >= 4 and \
                        not _top_level_matches(r", ", rest) and rest[-1:].isalnum():
                    cands.append((pi, si, _cap(rest) + " " + _decap(head, lex) + end))
            if "," in body or not body[-1:].isalnum():
                continue
            for m in re.finditer(r" (in|on|for|with|by|through|from|at|via|during|under|"
                                 r"without|inside|over) ", body):
                main, tail = body[:m.start()], body[m.start() + 1:]
                if _nwords(main) >= 4 and 2 <= _nwords(tail) <= 6 and _balanced(main) and \
                        not re.search(r" (and|or|that|which|who|if|when|to) ", " " + tail) \
                        and main.split()[-1].lower() not in STOP_WORDS | _PARTICLES and \
                        (main.split()[-1].lower(), m.group(1)) not in _IDIOMS:
                    cands.append((pi, si, _cap(tail) + ", " + _decap(main, lex) + end))
    return _replace_picked(rng, cands, doc, done)


_IRREGULAR_PARTICIPLES = {
    "built": "build", "written": "write", "done": "do", "made": "make", "found": "find",
    "given": "give", "known": "know", "seen": "see", "shown": "show", "taken": "take",
    "kept": "keep", "set": "set", "run": "run", "put": "put", "sent": "send", "left": "leave",
    "held": "hold", "read": "read", "chosen": "choose", "driven": "drive", "begun": "begin",
    "brought": "bring", "bought": "buy", "caught": "catch", "thought": "think",
    "told": "tell", "split": "split", "understood": "understand", "hidden": "hide",
    "broken": "break", "frozen": "freeze", "forgotten": "forget", "got": "get",
    "gotten": "get", "meant": "mean", "paid": "pay", "lost": "lose", "fed": "feed",
    "led": "lead", "bound": "bind", "thrown": "throw", "drawn": "draw",
    "overridden": "override", "rewritten": "rewrite", "rebuilt": "rebuild", "undone": "undo",
    "withdrawn": "withdraw", "spent": "spend", "shut": "shut", "cut": "cut", "hit": "hit",
}
_PASSIVE_RE = re.compile(
    r"(?P<subj>(?:[A-Z][\w\-]*|[A-Z])(?: [\w\-/.]+){0,5}?) "
    r"(?P<aux>(?:can|could|must|should|may|might|will|would|cannot|can't) be|is|are|was|were)"
    r"(?P<adv>(?: (?:only|also|then|not|never|easily|simply|usually|often|always|still|"
    r"just|now|already|\w+ly))?) (?P<vbn>[a-z]+)(?P<rest>(?: .*)?)(?P<end>[.!?])")
_NOT_SUBJECT = frozenset("is are was were be been can could must should may might will would "
                         "cannot that which who when if because and or but since while has "
                         "have had do does did not there it this these those they he she we "
                         "you i one".split())


_COORDINATED_VERB_RE = re.compile(
    r"\b(and|or|but) (is|are|was|were|will|would|can|could|may|might|must|should|has|have|"
    r"had|usually|often|then|also|not|\w+s)\b")


def _participle_base(lex, w):
    """The base form of the past participle w ('created' -> 'create'), or None."""
    if w in _IRREGULAR_PARTICIPLES:
        return _IRREGULAR_PARTICIPLES[w]
    if lex.words is None or not w.endswith("ed"):
        return None
    for lemma, kind in lex._lemmas(w):
        if kind == "ed" and lemma in lex.words and len(lemma) > 2 and \
                any(pos == "verb" for pos, _ in lex.thes.get(lemma, ())):
            return lemma
    return None


def passive_to_active(doc, rng, lex, p):
    """Turns passive sentences with a short subject active, with probability p each:
    'Hard links can only be created on the same filesystem.' -> 'One can only create hard
    links on the same filesystem.'; 'The rsync command is used daily.' -> 'We use the rsync
    command daily.'; 'The files were removed.' -> 'We removed the files.'"""
    for sents in doc:
        for si, s in enumerate(sents):
            m = _PASSIVE_RE.fullmatch(s)
            if not m or rng.random() >= p:
                continue
            subj, aux, adv, vbn = m.group("subj"), m.group("aux"), m.group("adv"), \
                m.group("vbn")
            rest = m.group("rest")
            words = [w.lower() for w in subj.split()]
            if any(w in _NOT_SUBJECT for w in words) or not _balanced(subj) or \
                    words[0] in _PHRASE_STARTS or words[0].endswith(("ing", "ly")) or \
                    lex.is_pos(words[0], "verb", 0.5) or \
                    re.match(r" (\S+ ){0,2}by ", rest) or not _balanced(rest) or \
                    _COORDINATED_VERB_RE.search(rest) or re.search(r"[,;:]$", subj):
                continue  # a connective or a gerund, an agent, a second verb of subj
            base = _participle_base(lex, vbn)
            if not base:
                continue
            obj = _decap(subj, lex)
            if aux in ("is", "are"):
                verb = (["We"] if not adv.strip() else ["We", adv.strip()]) + [base]
            elif aux in ("was", "were"):
                if vbn in _IRREGULAR_PARTICIPLES:
                    continue  # 'was written' -> 'wrote': past forms not known
                verb = (["We"] if not adv.strip() else ["We", adv.strip()]) + [vbn]
            else:
                modal = aux.split()[0]
                actor = rng.choice(["One", "We", "You"])
                verb = [actor, modal] + ([adv.strip()] if adv.strip() else []) + [base]
            if "not" in verb and aux in ("is", "are", "was", "were"):
                continue  # 'We not use': needs 'do'
            sents[si] = " ".join(verb + [obj]) + rest + m.group("end")


_FRONT_PREPS = frozenset("in on for with by at from during under without after before "
                         "as to unlike like besides".split())


# ---------------------------------------------------------------------------------------
# Word edits inside sentences. A document here is a list of paragraphs (strings); every edit
# returns the new list. Tokens are split at spaces; _TOKEN_RE parses a word token.


def _parse(tok):
    m = _TOKEN_RE.fullmatch(tok)
    return m.groups() if m else None


def _sentence_start(ts, i):
    return i == 0 or ts[i - 1][-1:] in ".!?:"


def _plain(ts, i):
    """The lowercase word of token i when it is a plain word (no quotes, brackets or
    punctuation around it), else ''."""
    if i < 0 or i >= len(ts):
        return ""
    g = _parse(ts[i])
    return g[1].lower() if g and not g[0] and not g[2] else ""


def _fix_articles(ts):
    for i in range(len(ts) - 1):
        if ts[i] in ("a", "an", "A", "An"):
            g = _parse(ts[i + 1])
            if g and not g[0]:
                art = "an" if g[1][0].lower() in "aeiou" else "a"
                ts[i] = _cap(art) if ts[i][0] == "A" else art
    return ts


_DROP_ADVERBS = frozenset("very really quite just also simply still even actually certainly "
                          "basically easily rather fairly".split())
_KEEP_ADJECTIVES = frozenset("same other different first last next previous single multiple "
                             "many few several own such only whole entire new old former "
                             "latter similar identical separate additional certain possible "
                             "impossible necessary unnecessary available unavailable empty "
                             "true false able unable".split())


def drop_modifiers(doc, rng, lex, p):
    """Drops adverbs and adjectives (in front of a noun) with probability p each:
    'is fully documented' -> 'is documented', 'the following standards' -> 'the standards'."""
    out = []
    for para in doc:
        ts, res = para.split(), []
        i = 0
        while i < len(ts):
            g = _parse(ts[i])
            start = _sentence_start(ts, i)
            if g and not g[0] and (g[1].islower() or start) and rng.random() < p:
                lw = g[1].lower()
                adv = lw in _DROP_ADVERBS or (lw.endswith("ly") and len(lw) > 4 and
                                              lex.is_pos(lw, "adv", 0.6))
                nxt = _parse(ts[i + 1]) if i + 1 < len(ts) else None
                if adv and not g[2] and nxt and not nxt[0] and \
                        (not start or g[1][0].isupper()):
                    if start:
                        ts[i + 1] = _cap(_decap(ts[i + 1], lex))
                    i += 1
                    continue
                if adv and g[2] == "," and start and nxt and i + 2 < len(ts):
                    ts[i + 1] = _cap(ts[i + 1])
                    i += 1
                    continue
                prev = _plain(ts, i - 1)
                if not adv and not g[2] and nxt and not nxt[0] and nxt[1].islower() and \
                        lw not in _KEEP_ADJECTIVES and lex.is_pos(lw, "adj") and \
                        nxt[1] not in STOP_WORDS and (prev in _DETERMINERS or
                                                       prev in _PREPOSITIONS or start) and \
                        not lex.term(lw, nxt[1]) and lex.ordinary(lw):
                    if start:
                        ts[i + 1] = _cap(ts[i + 1])
                    i += 1
                    continue
            res.append(ts[i])
            i += 1
        out.append(" ".join(_fix_articles(res)))
    return out


_INSERT_AFTER_MODAL = ["simply", "also", "then", "still", "easily", "normally", "actually",
                       "just", "usually", "always", "typically", "generally", "really",
                       "in principle", "of course", "in most cases"]
_INSERT_ADJECTIVES = ["actual", "whole", "given", "specific", "relevant", "usual",
                      "respective", "corresponding", "particular", "underlying", "entire",
                      "present", "required"]
_INSERT_AT_END = ["as well", "in this case", "in practice", "here", "in general", "too",
                  "as a rule", "in most cases", "of course", "by default", "in the end",
                  "at this point", "if needed", "as usual", "in this context",
                  "for this purpose", "in many situations", "without much effort",
                  "in everyday use", "for the most part", "to some extent"]
_INSERT_AT_END_COMMA = ["which is worth knowing", "at least in most setups", "if desired",
                        "as one would expect", "for obvious reasons", "in most situations",
                        "as noted above"]
_INSERT_AFTER_PRONOUN = ["typically", "simply", "usually", "also", "then", "normally",
                         "often", "generally", "actually", "really", "just", "basically"]
_PRONOUN_SUBJECTS = frozenset("it they we you he she".split())
_MODALS = frozenset("can could will would should must may might cannot".split())


def _adverb_like(w):
    return w.endswith("ly") or w in _DROP_ADVERBS or w in _INSERT_AFTER_MODAL or \
        w in _ADVERBS or w in ("not", "never", "often", "in", "of", "at", "by", "as")


def insert_phrases(doc, rng, lex, n):
    """Inserts n short words or phrases: an adverb after a modal verb, after is/are or
    between a pronoun and its verb, 'also'/'then'/'still' after and/but, an adjective after
    'the' (a few), a phrase at the end of a sentence (one)."""
    toks = [p.split() for p in doc]
    cands = []
    for pi, ts in enumerate(toks):
        for i, t in enumerate(ts[:-1]):
            g, nxt = _parse(t), _parse(ts[i + 1])
            if not g or g[2] or not nxt or nxt[0] or not nxt[1].islower():
                if g and g[2] == "." and not g[0] and g[1].islower() and \
                        (i + 1 == len(ts) or ts[i + 1][:1].isupper()):
                    cands.append((pi, i, "end"))
                continue
            lw = g[1].lower()
            if lw in _MODALS and not _adverb_like(nxt[1]):
                cands.append((pi, i, "modal"))
            elif lw in ("and", "but") and i > 0 and ts[i - 1][-1:].isalpha() and \
                    nxt[1] not in ("and", "or", "then", "also", "still"):
                cands.append((pi, i, lw))
            elif lw in ("is", "are") and nxt[1] not in ("not", "a", "an", "the") and \
                    not _adverb_like(nxt[1]):
                cands.append((pi, i, "be"))
            elif lw in _PRONOUN_SUBJECTS and not _adverb_like(nxt[1]) and \
                    nxt[1] not in STOP_WORDS and lex.is_pos(nxt[1], "verb", 0.5) and \
                    (lw in ("it", "this", "he", "she") or not nxt[1].endswith("s")):
                cands.append((pi, i, "pron"))
            elif lw == "the" and nxt[1] not in STOP_WORDS and len(nxt[1]) >= 3:
                cands.append((pi, i, "the"))
        if ts:
            g = _parse(ts[-1])
            if g and g[2] == "." and g[1].islower():
                cands.append((pi, len(ts) - 1, "end"))
    ins = {}
    rng.shuffle(cands)
    ends = adjs = 0
    for pi, i, kind in cands:
        if len(ins) == n:
            break
        if kind == "end":
            ends += 1
            if ends > max(1, n // 8):
                continue  # few closing phrases: more read like a tic
        if kind == "the":
            adjs += 1
            if adjs > max(1, n // 5):
                continue  # a few adjectives at most, for the same reason
        if kind in ("and", "but"):
            ins[pi, i] = rng.choice(["also", "then"] if kind == "and" else ["still", "also"])
        elif kind == "modal":
            ins[pi, i] = rng.choice(_INSERT_AFTER_MODAL)
        elif kind == "be":
            ins[pi, i] = rng.choice(_ADVERBS)
        elif kind == "pron":
            ins[pi, i] = rng.choice(_INSERT_AFTER_PRONOUN)
        elif kind == "the":
            ins[pi, i] = rng.choice(_INSERT_ADJECTIVES)
        else:
            ins[pi, i] = "end"
    out = []
    for pi, ts in enumerate(toks):
        res = []
        for i, t in enumerate(ts):
            w = ins.get((pi, i))
            if w == "end":
                if rng.random() < 0.3:
                    res += [t[:-1] + ",", rng.choice(_INSERT_AT_END_COMMA) + "."]
                else:
                    res += [t[:-1], rng.choice(_INSERT_AT_END) + "."]
            else:
                res.append(t)
                if w:
                    res.append(w)
        out.append(" ".join(_fix_articles(res)))
    return out


def possessive_to_of(doc, rng, lex, p):
    """'the user's directory' -> 'the directory of the user', 'Python's support' -> 'the
    support of Python', with probability p."""
    out = []
    for para in doc:
        ts, res, i = para.split(), [], 0
        while i < len(ts):
            m = re.fullmatch(r"([A-Za-z]+)'s", ts[i])
            g = _parse(ts[i + 1]) if m and i + 1 < len(ts) else None
            if g and not g[0] and g[1].islower() and _is_content(g[1]) and \
                    lex.is_pos(g[1], "noun", 0.6) and _plain(ts, i + 2) != "of" and \
                    (g[2] or i + 2 >= len(ts) or _plain(ts, i + 2) in STOP_WORDS) and \
                    rng.random() < p:
                prev = res[-1] if res else ""
                if prev.lower() in _DETERMINERS - {"no", "every", "each", "another"}:
                    res[-1:] = [_cap("the") if prev[0].isupper() else "the", g[1], "of",
                                prev.lower(), m.group(1) + g[2]]
                    i += 2
                    continue
                if m.group(1)[0].isupper() and not _sentence_start(ts, i) and \
                        not (prev and prev.lower() in _DETERMINERS):
                    res += ["the", g[1], "of", m.group(1) + g[2]]
                    i += 2
                    continue
            res.append(ts[i])
            i += 1
        out.append(" ".join(_fix_articles(res)))
    return out


def of_genitive(doc, rng, lex, p):
    """'the name of the file' -> 'the file name' or 'the file's name', with probability p."""
    out = []
    for para in doc:
        ts, res, i = para.split(), [], 0
        while i < len(ts):
            if i + 4 < len(ts) and ts[i] in ("the", "The") and ts[i + 2] == "of" and \
                    ts[i + 3] in ("the", "a", "an"):
                x, y = _plain(ts, i + 1), _parse(ts[i + 4])
                after = _parse(ts[i + 5]) if i + 5 < len(ts) else None
                head_ends = y and (y[2] or not after or after[0] or
                                   after[1].lower() in STOP_WORDS)
                if x and _is_content(x) and y and not y[0] and y[1].islower() and \
                        _is_content(y[1]) and head_ends and rng.random() < p:
                    art = ts[i + 3] if ts[i + 3] != "the" else "the"
                    art = _cap(art) if ts[i][0] == "T" else art
                    if rng.random() < 0.5:
                        poss = y[1] + ("'" if y[1].endswith("s") else "'s")
                        res += [art, poss, x + y[2]]
                    else:
                        res += [art, y[1], x + y[2]]
                    i += 5
                    continue
            res.append(ts[i])
            i += 1
        out.append(" ".join(_fix_articles(res)))
    return out


_ITEM_RE = re.compile(r"[A-Za-z][\w\-+./*]*")


def _list_at(ts, i):
    """(end, items, conjunction, oxford comma, closing punctuation) of a list of one-token
    items starting at token i ('a, b, and c', 'a, b or c'), or None."""
    items, j = [], i
    while j < len(ts) and ts[j].endswith(",") and _ITEM_RE.fullmatch(ts[j][:-1]):
        items.append(ts[j][:-1])
        j += 1
    if not items or j + 1 >= len(ts):
        return None
    oxford = ts[j] in ("and", "or")
    if not oxford:
        if not _ITEM_RE.fullmatch(ts[j]) or ts[j + 1] not in ("and", "or") or j + 2 >= len(ts):
            return None
        items.append(ts[j])
        j += 1
    m = re.fullmatch(r"([A-Za-z][\w\-+./*]*?)([.,;:!?)]*)", ts[j + 1])
    if not m or len(items) < 2:
        return None
    return j + 2, items + [m.group(1)], ts[j], oxford, m.group(2)


def swap_coordination(doc, rng, lex, p):
    """'A and B' -> 'B and A' for two single words of the same form, and the items of a
    list of one-word items ('amanda, bacula, or BackupPC') shuffled, with probability p."""
    out = []
    for para in doc:
        ts, i = para.split(), 0
        while i + 2 < len(ts):
            lst = _list_at(ts, i)
            if lst and (i == 0 or _plain(ts, i - 1) in STOP_WORDS or ts[i - 1][-1:] in ":(") \
                    and rng.random() < p:
                end, items, conj, oxford, post = lst
                old = list(items)
                while items == old:
                    rng.shuffle(items)
                new = [w + "," for w in items[:-2]] + \
                    [items[-2] + ("," if oxford else ""), conj, items[-1] + post]
                ts[i:end] = new
                i += len(new)
                continue
            a, c, b = _plain(ts, i), ts[i + 1], _parse(ts[i + 2])
            if a and c in ("and", "or") and b and not b[0] and b[1].islower() and \
                    _is_content(a) and _is_content(b[1]) and \
                    _plain(ts, i - 1) not in ("between", "both", "either", "neither") and \
                    [a.endswith(e) for e in ("s", "ed", "ing", "ly")] == \
                    [b[1].endswith(e) for e in ("s", "ed", "ing", "ly")] and \
                    rng.random() < p:
                ts[i], ts[i + 2] = b[1], a + b[2]
                i += 3
                continue
            i += 1
        out.append(" ".join(ts))
    return out


_AGREE = {"is": "are", "was": "were", "has": "have", "does": "do", "isn't": "aren't",
          "wasn't": "weren't", "doesn't": "don't", "hasn't": "haven't"}
_AGREE.update({v: k for k, v in list(_AGREE.items())})
_NUMBER_NEXT = _PREPOSITIONS | _MODALS | {"and", "or", "to", "are", "were", "have", "do"} | \
    set(_AGREE)


def change_number(doc, rng, lex, p):
    """Singular <-> plural for a noun after the/this/these (and the verb after it), with
    probability p: 'the file is' -> 'the files are', 'these files' -> 'this file'."""
    out = []
    for para in doc:
        ts = para.split()
        for i in range(len(ts) - 1):
            det = ts[i].lower()
            if det not in ("the", "this", "these"):
                continue
            g = _parse(ts[i + 1])
            if not g or g[0] or not g[1].islower() or not _is_content(g[1]) or \
                    not lex.is_pos(g[1], "noun", 0.6) or rng.random() >= p:
                continue
            nxt = ts[i + 2] if i + 2 < len(ts) else ""
            if not g[2] and nxt not in _NUMBER_NEXT:
                continue
            if g[2] and g[2] not in ",.;:":
                continue
            forms = lex.plural(g[1])
            if not forms:
                continue
            plural = g[1] == forms[0]  # becomes plural
            if det in ("this", "these"):
                if (det == "this") != plural:
                    continue
                ts[i] = _cap("these" if plural else "this") if ts[i][0].isupper() else \
                    ("these" if plural else "this")
            new = forms[1] if plural else forms[0]
            ts[i + 1] = new + g[2]
            if not g[2] and nxt in _AGREE:
                singular_verb = nxt in ("is", "was", "has", "does", "isn't", "wasn't",
                                        "doesn't", "hasn't")
                if singular_verb == plural:
                    ts[i + 2] = _AGREE[nxt]
        out.append(" ".join(_fix_articles(ts)))
    return out


def reduce_relatives(doc, rng, lex, p):
    """'an agent which is written in' -> 'an agent written in', ', which are X-ed' ->
    ', X-ed', with probability p."""
    out = []
    for para in doc:
        ts, res, i = para.split(), [], 0
        while i < len(ts):
            if i + 2 < len(ts) and ts[i] in ("which", "that") and \
                    ts[i + 1] in ("is", "are", "was", "were") and i > 0:
                g = _parse(ts[i + 2])
                if g and not g[0] and g[1].islower() and _is_content(g[1]) and \
                        (g[1].endswith("ed") and "verb" in lex.pos(g[1]) or
                         lex.is_pos(g[1], "adj")) and rng.random() < p:
                    i += 2
                    continue
            res.append(ts[i])
            i += 1
        out.append(" ".join(res))
    return out


def determiners(doc, rng, lex, p):
    """'the' before a noun mentioned earlier -> 'this'/'these'; 'the' before a plural noun
    dropped ('the files are' -> 'files are'); each with probability p."""
    out, seen = [], set()
    for para in doc:
        ts = para.split()
        res = []
        for i, t in enumerate(ts):
            g = _parse(ts[i + 1]) if i + 1 < len(ts) else None
            if t in ("the", "The") and g and not g[0] and g[1].islower() and \
                    _is_content(g[1]) and lex.is_pos(g[1], "noun", 0.6) and \
                    rng.random() < p:
                nxt = _plain(ts, i + 2)
                forms = lex.plural(g[1])
                plural = forms is not None and g[1] == forms[1]
                if plural and nxt != "of" and not _plain(ts, i - 1) in _PREPOSITIONS:
                    ts[i + 1] = _cap(ts[i + 1]) if t == "The" else ts[i + 1]
                    continue
                if g[1] in seen:
                    res.append(("These" if plural else "This") if t == "The" else
                               ("these" if plural else "this"))
                    continue
            g0 = _parse(t)
            if g0 and g0[1].islower():
                seen.add(g0[1])
            res.append(t)
        out.append(" ".join(res))
    return out


_WE = {"you": "we", "your": "our", "yours": "ours", "yourself": "ourselves",
       "yourselves": "ourselves", "you're": "we're", "you'll": "we'll", "you've": "we've",
       "you'd": "we'd"}
_AUXILIARIES = frozenset("do does did can could will would should must may might are were "
                         "have has had".split())
_SUBJECT_AFTER = frozenset("if when once unless that and or but so because since as before "
                           "after until while where then whenever although though which "
                           "what how why whether".split())


def switch_person(doc, rng, lex, p):
    """Addresses the reader as 'we' rather than 'you' ('you can' -> 'we can', 'allows you
    to' -> 'allows us to', 'your' -> 'our'), each occurrence with probability p (a person
    doing it does it throughout: p = 1)."""
    out = []
    for para in doc:
        ts = para.split()
        for i, t in enumerate(ts):
            m = re.fullmatch(r"([(\"']*)([A-Za-z']+)([.,;:!?)\"']*)", t)
            if not m or m.group(2).lower() not in _WE or rng.random() >= p:
                continue
            w = m.group(2).lower()
            new = _WE[w]
            prev = _plain(ts, i - 1)
            if w == "you" and i > 0 and ts[i - 1][-1:] not in ".!?:,;" and \
                    prev not in _SUBJECT_AFTER and prev not in _AUXILIARIES and \
                    (prev in _PREPOSITIONS or prev == "to" or lex.is_pos(prev, "verb", 0.5)) \
                    or w == "you" and m.group(3) and m.group(3) not in ",":
                new = "us"  # an object: 'gives you', 'for you'; 'the value you return' keeps
                # a subject, as does 'can you'.
            if m.group(2)[0].isupper():
                new = _cap(new)
            ts[i] = m.group(1) + new + m.group(3)
        out.append(" ".join(ts))
    return out


def passive_get(doc, rng, lex, p):
    """'is configured' -> 'gets configured', 'are kept' -> 'get kept' with probability p."""
    out = []
    for para in doc:
        ts = para.split()
        for i in range(1, len(ts) - 1):
            if ts[i] in ("is", "are") and _plain(ts, i - 1) not in ("it", "there", "what",
                                                                      "this", "that"):
                g = _parse(ts[i + 1])
                if g and not g[0] and g[1].endswith("ed") and g[1].islower() and \
                        "verb" in lex.pos(g[1]) and rng.random() < p:
                    ts[i] = "gets" if ts[i] == "is" else "get"
        out.append(" ".join(ts))
    return out


# ---------------------------------------------------------------------------------------
# Revisions


LIGHT_EDITS = [split_sentence, merge_sentences, delete_phrase, insert_words]


def light_revision(src, rng, lex, filler_sents):
    """20-25% of the content words replaced, a clause swap and 2-4 sentence edits."""
    doc = sentences(src)
    swap_clauses(doc, rng, lex) or turn_around(doc, rng, lex)
    edits = list(LIGHT_EDITS)
    rng.shuffle(edits)
    for e in edits[:rng.randint(2, 4)]:
        e(doc, rng, lex)
    if rng.random() < 0.5:
        delete_sentence(doc, rng, lex)
    reword(doc, rng, 0.3, lex)
    paras = drop_modifiers(join(doc), rng, lex, 0.15)
    paras = substitute_synonyms(paras, rng, rng.uniform(0.20, 0.25), lex)
    return insert_phrases(paras, rng, lex, rng.randint(1, 3))


def _rewrite(src, rng, lex, filler_sents, k):
    """A revision of strength k (moderate 0-0.2, heavy 0.9-2); the probabilities of the word
    edits grow with k up to a cap, the number of inserted words keeps growing.

    Sentences: 5-15% (k = 0) to 15-30% (k >= 1) deleted (those full of code, paths or
    acronyms more likely), shuffled within paragraphs, 0-1 (k < 1) or 1-2 foreign sentences
    added, 2-9 splits or merges, passives turned active, 1-10 clauses swapped or turned around,
    1-7 connectives added. Then phrases reworded, 'you' -> 'we', modifiers dropped, noun
    phrases reordered, singular <-> plural, relative clauses reduced, articles changed,
    synonyms for 35-45% (k = 0) to all of the content words, short words inserted."""
    doc = sentences(src)
    n_sent = sum(len(s) for s in doc)
    share = rng.uniform(min(0.15, 0.05 + 0.1 * k), min(0.30, 0.15 + 0.15 * k))
    for _ in range(max(1, round(share * n_sent))):
        if rng.random() < 0.75:
            delete_sentence(doc, rng, lex, technical=True)
        else:
            delete_phrase(doc, rng, lex)
    reorder_sentences(doc, rng, lex, min(0.9, 0.6 * k))
    n_foreign = 2 if k >= 1.5 else rng.randint(1, 2) if k >= 1 else rng.randint(0, 1)
    for _ in range(n_foreign):
        insert_foreign(doc, rng, filler_sents, long=k >= 1.2)
    for _ in range(rng.randint(2, 3 + round(3 * k))):
        rng.choice([split_sentence, merge_sentences])(doc, rng, lex)
    passive_to_active(doc, rng, lex, min(0.8, 0.6 * k))
    turned = set()
    for _ in range(rng.randint(1 + round(k), 2 + round(4 * k))):
        rng.choice([swap_clauses, turn_around])(doc, rng, lex, turned)
    for _ in range(rng.randint(1, 1 + round(3 * k))):
        insert_words(doc, rng, lex)
    reword(doc, rng, min(0.95, 0.5 + 0.4 * k), lex)
    paras = join(doc)
    if rng.random() < k:
        paras = switch_person(paras, rng, lex, 1.0)
    paras = drop_modifiers(paras, rng, lex, min(0.8, 0.6 * k))
    paras = of_genitive(paras, rng, lex, min(0.9, 0.8 * k))
    paras = possessive_to_of(paras, rng, lex, min(0.8, 0.6 * k))
    paras = swap_coordination(paras, rng, lex, min(0.8, 0.7 * k))
    paras = change_number(paras, rng, lex, min(0.8, 0.6 * k))
    paras = passive_get(paras, rng, lex, min(0.7, 0.5 * k))
    paras = reduce_relatives(paras, rng, lex, min(0.9, 0.8 * k))
    paras = determiners(paras, rng, lex, min(0.6, 0.4 * k))
    paras = substitute_synonyms(paras, rng, min(1.0, rng.uniform(0.35, 0.45) + 0.6 * k), lex)
    words = sum(_nwords(p) for p in paras)
    return insert_phrases(paras, rng, lex, round(rng.uniform(0.04, 0.08) * k * words))


def moderate_revision(src, rng, lex, filler_sents):
    """Between light and heavy: about the heavy revision of earlier versions of this script
    (word 3-gram containment about 0.35)."""
    return _rewrite(src, rng, lex, filler_sents, rng.uniform(0.0, 0.2))


def heavy_revision(src, rng, lex, filler_sents):
    """A thorough paraphrase (word 3-gram containment about 0.16, 0.1 for the most revised)."""
    return _rewrite(src, rng, lex, filler_sents, rng.uniform(0.9, 2.0))


CATEGORIES = [("light_revision", light_revision), ("moderate_revision", moderate_revision),
              ("heavy_revision", heavy_revision)]


# ---------------------------------------------------------------------------------------


def _in_range(doc, lo, hi):
    return lo <= make_set.words_of(doc) <= hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True,
                    help="python-doc | debian-handbook | licenses | dir:PATH")
    ap.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sources", type=int, default=100, help="registered documents")
    ap.add_argument("--per-category", type=int, default=20, help="tests per revision category")
    ap.add_argument("--unrelated", type=int, default=200, help="unrelated (negative) tests")
    ap.add_argument("--min-words", type=int, default=150)
    ap.add_argument("--max-words", type=int, default=400)
    ap.add_argument("--thesaurus", default=THESAURUS, help="MyThes .dat file")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    files = make_set.load_corpus(args.corpus)  # repeated paragraphs already dropped
    lex = Lexicon(load_thesaurus(args.thesaurus), load_dict_words(), files)

    # Candidate documents: consecutive paragraphs of one file, min..max words.
    cands = []
    for fi, paras in enumerate(files):
        for d in make_set.cut_documents([paras], args.min_words, args.max_words):
            if _in_range(d, args.min_words, args.max_words):
                cands.append((fi, d))
    rng.shuffle(cands)
    n_filler = max(3, args.sources // 10)
    if len(cands) < args.sources + n_filler + 1:
        sys.exit(f"make_short_set: corpus {args.corpus} yields {len(cands)} documents of "
                 f"{args.min_words}-{args.max_words} words; need {args.sources + n_filler + 1}")
    sources = cands[:args.sources]
    src_files = {fi for fi, _ in sources}
    rest = cands[args.sources:]
    # Foreign sentences for heavy revisions: from other files than the sources if possible.
    rest.sort(key=lambda c: c[0] in src_files)  # stable: keeps the shuffled order
    filler = rest[:n_filler]
    filler_sents = [s for _, d in filler for sents in sentences(d) for s in sents
                    if 8 <= _nwords(s) <= 35 and s[-1:] in ".!?"]
    if not filler_sents:
        sys.exit("make_short_set: no filler sentences")

    # Negatives: unused paragraphs sharing no 8-word run with a source, cut into documents;
    # those of a source's file first (same chapter or page, hence same topic).
    used = {p for _, d in sources + filler for p in d}
    src_grams = set()
    for _, d in sources:
        for p in d:
            src_grams |= make_set._shingles(p)
    same, other = [], []
    for fi, paras in enumerate(files):
        free = [p for p in paras if p not in used and not (make_set._shingles(p) & src_grams)]
        docs = [d for d in make_set.cut_documents([free], args.min_words, args.max_words)
                if _in_range(d, args.min_words, args.max_words)]
        (same if fi in src_files else other).extend(docs)
    rng.shuffle(same)
    rng.shuffle(other)
    negatives = (same + other)[:args.unrelated]
    n_same = min(len(same), len(negatives))

    src_names = make_set.write_sources(args.out, [d for _, d in sources])

    rows = []
    for cat, fn in CATEGORIES:
        for _ in range(args.per_category):
            si = rng.randrange(len(sources))
            rows.append((cat, src_names[si], fn(sources[si][1], rng, lex, filler_sents)))
    for d in negatives:
        rows.append(("unrelated_same_topic", "-", d))
    rng.shuffle(rows)  # test names reveal nothing about the category

    make_set.write_tests(args.out, rows)
    src_words = sum(make_set.words_of(d) for _, d in sources)
    with open(os.path.join(args.out, "corpus.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write(f"corpus={args.corpus} seed={args.seed} sources={len(sources)} "
                f"source_words={src_words} words={args.min_words}-{args.max_words} "
                f"tests={len(rows)} unrelated={len(negatives)} same_file={n_same}\n")
    print(f"make_short_set: {args.corpus}: {len(sources)} sources ({src_words} words), "
          f"{len(rows)} tests ({len(negatives)} unrelated, {n_same} from a source's file) "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
