#!/usr/bin/env python3
"""Tests of eval/score_compare.py: `cops compare`'s pairs scored against a set's truth.

    score_compare_test.py COPS   (the built client, as ctest passes it)
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "eval", "score_compare.py")
COPS = None


def prose(seed, words=200):
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "su", "tor", "vel", "dra", "pin", "gu", "ra", "shi"]
    out = []
    for i in range(words):
        out.append("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
        if i % 12 == 11:
            out[-1] += "."
    return " ".join(out) + "\n"


class ScoreCompareTest(unittest.TestCase):
    def test_listed_pairs_are_scored_against_the_truth(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "sources"))
            os.makedirs(os.path.join(d, "tests"))
            files = {"sources/s1.txt": prose(1), "sources/s2.txt": prose(2),
                     "tests/t1.txt": prose(1),      # a copy of s1: a true pair
                     "tests/t2.txt": prose(3),      # unrelated to both
                     "tests/t3.txt": prose(2),      # a copy of s2 the truth calls unrelated
                     "tests/t4.txt": prose(4)}      # said to copy s1, which it does not
            for name, text in files.items():
                with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                    f.write(text)
            with open(os.path.join(d, "truth.tsv"), "w", encoding="utf-8") as f:
                f.write("# test_file\tcategory\tsource_file\tviolation\n"
                        "t1.txt\texact\ts1.txt\t1\nt2.txt\tunrelated\t-\t0\n"
                        "t3.txt\tunrelated\t-\t0\nt4.txt\texact\ts1.txt\t1\n")
            run = subprocess.run([sys.executable, SCRIPT, "--cops", COPS, "--set", d],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
            score = json.loads(run.stdout)
        self.assertEqual(score["documents"], 6)
        self.assertEqual(score["failed"], 0)
        self.assertEqual(score["true_pairs"], 2)
        self.assertEqual(score["listed"], 2)        # s1-t1 and s2-t3
        self.assertEqual(score["true_listed"], 1)
        self.assertEqual(score["false_listed"], 1)
        self.assertEqual(score["heavy_revisions"], 0)  # copies are listed by their passage
        self.assertEqual(score["precision"], 0.5)
        self.assertEqual(score["recall"], 0.5)


if __name__ == "__main__":
    COPS = sys.argv.pop(1)
    unittest.main()
