#!/usr/bin/env python3
"""Tests of eval/make_same_genre_set.py: what of an npm README counts as prose; the texts and
groups of Debian's package descriptions."""

import lzma
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "eval"))
import make_same_genre_set as sg  # noqa: E402


class MarkdownProseTest(unittest.TestCase):
    def test_code_html_images_and_link_targets_are_removed(self):
        readme = "\n".join([
            "# left-pad",
            "[![Build](https://ci.example/badge.svg)](https://ci.example/job)",
            "[![npm][npm]][npm-url] [![node][node]][node-url]",
            "<p align=\"center\"><img src=\"logo.png\"></p>",
            "<!-- a comment the reader never sees -->",
            "Pads a string on the left, see [the docs](https://example.org/docs).",
            "For more, see the [homepage][] and the [guide][guide-url].",
            "```js",
            "const leftPad = require('left-pad')",
            "```",
            "    indented code line",
            "[docs]: https://example.org/docs",
            "Released under the MIT licence at https://example.org.",
        ])
        prose = sg.markdown_prose(readme, 2000)
        self.assertIn("Pads a string on the left, see the docs.", prose)
        self.assertIn("Released under the MIT licence at", prose)
        self.assertIn("For more, see the homepage and the guide.", prose)
        for gone in ("require", "badge", "ci.example", "img", "logo.png", "comment",
                     "indented code", "example.org", "npm-url", "node"):
            self.assertNotIn(gone, prose)

    def test_a_tag_over_several_lines_is_removed_and_text_with_a_less_than_sign_kept(self):
        # A logo's tag with its attributes on three lines left "img align right width 95
        # height 95" in every README of a plugin family, shared prose no reader sees.
        readme = "\n".join([
            "# Plugin",
            '<img align="right" width="95" height="95"',
            '     alt="Logo of the project"',
            '     src="https://example.org/logo.svg">',
            "Transforms styles with plugins.",
            "Versions <v4.8 differ in their output.",
            "Arrow functions => work in both.",
        ])
        prose = sg.markdown_prose(readme, 2000)
        self.assertIn("Transforms styles with plugins.", prose)
        self.assertIn("Versions <v4.8 differ in their output.\nArrow functions => work", prose)
        for gone in ("img", "align", "width", "Logo of the project", "example.org"):
            self.assertNotIn(gone, prose)

    def test_an_unclosed_fence_keeps_the_text(self):
        # Only a closed fence is code: a stray ``` must not swallow the rest of the README.
        prose = sg.markdown_prose("Intro words here.\n```\nUsage words after it.\n", 2000)
        self.assertIn("Usage words after it.", prose)

    def test_cut_after_max_words_at_a_line_end(self):
        prose = sg.markdown_prose("one two three\nfour five six\nseven eight\n", 4)
        self.assertEqual(prose, "one two three\nfour five six\n")

    def test_cache_index_gives_groups_by_owner(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "readmes"))
            rows = [("a-pkg", "1.0.0", "alice", "a-pkg@1.0.0.md", "Alpha does things."),
                    ("@s/b", "2.0.0", "", "_s_b@2.0.0.md", "Beta does other things.")]
            with open(os.path.join(d, "index.tsv"), "w", encoding="utf-8") as index:
                for name, version, maintainer, file, text in rows:
                    with open(os.path.join(d, "readmes", file), "w", encoding="utf-8") as f:
                        f.write(text)
                    index.write(f"{name}\t{version}\t{maintainer}\t{file}\t-\n")
            docs = sg.npm_readmes(d, 2000)
        self.assertEqual([(g, n) for g, n, _ in docs], [("alice", "a-pkg"), ("@s/b", "@s/b")])
        self.assertEqual(docs[0][2].strip(), "Alpha does things.")


class DebianDescriptionsTest(unittest.TestCase):
    def write_xz(self, path, text):
        with lzma.open(path, "wt", encoding="utf-8") as f:
            f.write(text)

    def test_descriptions_are_grouped_by_maintainer_and_old_packages_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            translation, packages, old = (os.path.join(d, n) for n in ("t.xz", "p.xz", "o.xz"))
            self.write_xz(translation, "\n".join([
                "Package: alpha", "Description-md5: 1", "Description-en: frobnicates files",
                " Alpha frobnicates files quickly.", " .", " This package contains the tool.",
                "", "Package: beta", "Description-md5: 2", "Description-en: old tool",
                " Beta was in the last release.", "", "Package: gamma",
                "Description-en: has no maintainer in the lists", " Gamma text.", ""]))
            self.write_xz(packages, "\n".join([
                "Package: alpha", "Maintainer: Jane Doe <jane@example.org>", "",
                "Package: beta", "Maintainer: Team X <x@lists.example.org>", ""]))
            self.write_xz(old, "Package: beta\nDescription-en: old tool\n Beta.\n")
            docs = sg.debian_descriptions(translation, packages, old)
            everything = sg.debian_descriptions(translation, packages)
        self.assertEqual(docs, [("jane doe", "alpha", "frobnicates files\n\nAlpha frobnicates "
                                 "files quickly.\n\nThis package contains the tool.\n")])
        self.assertEqual([(g, n) for g, n, _ in everything],
                         [("jane doe", "alpha"), ("team x", "beta")])


if __name__ == "__main__":
    unittest.main()
