#!/usr/bin/env python3
"""Scores `cops compare` on an evaluation set: the pairs it lists against the set's truth.

A set's sources and tests go into one batch (`--batch DIR`, files as named in truth.tsv),
`cops --json compare --no-corpus DIR` compares every document with every other, and each
listed pair is a true pair when truth.tsv says its test copies its source (violation 1),
else a false one (two sources, two tests, or a test and a source it does not copy). Prints
precision, recall and F1 over the true pairs, how many pairs were listed as heavy
revisions, and how many documents failed alone (no words: `cops compare` then exits 2).
docs/reports.md ("cops compare") has the figures:

    python3 eval/score_compare.py --cops build/client/cops --set /tmp/p4p/dev/docs \
        [-- --no-heavy-revisions]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def truth_pairs(path):
    pairs = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            test, _category, source, violation = line.rstrip("\n").split("\t")
            if violation == "1":
                pairs.add(frozenset((test, source)))
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cops", default="build/client/cops")
    parser.add_argument("--set", required=True, help="a set: sources/, tests/, truth.tsv")
    parser.add_argument("compare_args", nargs="*", help="more `cops compare` arguments")
    a = parser.parse_args()
    truth = truth_pairs(os.path.join(a.set, "truth.tsv"))
    batch = tempfile.mkdtemp(prefix="cops_score_compare_")
    try:
        for part in ("sources", "tests"):
            for name in os.listdir(os.path.join(a.set, part)):
                if os.path.exists(os.path.join(batch, name)):
                    sys.exit("score_compare: %s is both a source and a test" % name)
                shutil.copy(os.path.join(a.set, part, name), batch)
        run = subprocess.run([a.cops, "--json", "compare", "--no-corpus"] + a.compare_args +
                             [batch], stdout=subprocess.PIPE, check=False)
        try:
            result = json.loads(run.stdout)  # exit 2 also when some documents failed alone
        except json.JSONDecodeError:
            sys.exit("score_compare: cops compare failed (exit %d)" % run.returncode)
    finally:
        shutil.rmtree(batch)
    listed = {frozenset((os.path.basename(p["a"]), os.path.basename(p["b"]))): p["heavy_revision"]
              for p in result["pairs"]}
    tp = sum(1 for p in listed if p in truth)
    fp = len(listed) - tp
    precision = tp / len(listed) if listed else 1.0
    recall = tp / len(truth) if truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    failed = sum(1 for d in result["documents"] if "error" in d)
    print(json.dumps({"set": a.set, "documents": len(result["documents"]), "failed": failed,
                      "true_pairs": len(truth), "listed": len(listed),
                      "true_listed": tp, "false_listed": fp,
                      "heavy_revisions": sum(1 for h in listed.values() if h),
                      "precision": round(precision, 3), "recall": round(recall, 3),
                      "f1": round(f1, 3)}))


if __name__ == "__main__":
    main()
