#include "client/html_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

v1::Span* AddSpan(v1::Match* m, uint32_t start, uint32_t end) {
  v1::Span* s = m->add_spans();
  s->set_test_start(start);
  s->set_test_end(end);
  return s;
}

TEST(EscapeHtmlTest, MarkupQuotesAndBrokenUtf8AreNeutralised) {
  EXPECT_EQ(EscapeHtml("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(EscapeHtml("caf\xc3\xa9"), "caf\xc3\xa9");            // valid UTF-8 kept
  EXPECT_EQ(EscapeHtml("caf\xe9!"), "caf\xEF\xBF\xBD!");           // Windows-1252 byte
  EXPECT_EQ(EscapeHtml("\xc0\xbc"), "\xEF\xBF\xBD\xEF\xBF\xBD");    // overlong '<'
  EXPECT_EQ(EscapeHtml(std::string("a\0b", 3)), "a\xEF\xBF\xBD" "b");
}

TEST(AllocatePassagesTest, EachByteCountsOnceForTheBestSource) {
  v1::CheckDocumentReply reply;
  v1::Match* best = reply.add_matches();   // ratio order: the first explains best
  AddSpan(best, 10, 50);
  v1::Match* second = reply.add_matches();
  AddSpan(second, 0, 30);   // overlaps the best one's start
  AddSpan(second, 40, 80);  // and its end
  v1::Match* copy = reply.add_matches();
  AddSpan(copy, 10, 50);    // the same passage again: nothing left for it
  const std::vector<AllocatedRange> r = AllocatePassages(reply, 70);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].start, 0u);
  EXPECT_EQ(r[0].end, 10u);
  EXPECT_EQ(r[0].source, 1);
  EXPECT_EQ(r[1].start, 10u);
  EXPECT_EQ(r[1].end, 50u);
  EXPECT_EQ(r[1].source, 0);
  EXPECT_EQ(r[2].start, 50u);
  EXPECT_EQ(r[2].end, 70u);  // cut at the text's end
  EXPECT_EQ(r[2].source, 1);
}

TEST(AllocatePassagesTest, ExcludedSpansCountForNoSource) {
  v1::CheckDocumentReply reply;
  v1::Match* best = reply.add_matches();
  AddSpan(best, 10, 50)->set_excluded(v1::EXCLUSION_QUOTE);
  AddSpan(best, 60, 70);
  v1::Match* second = reply.add_matches();
  AddSpan(second, 0, 40);  // the quoted bytes are not taken by #0, but excluded for it too
  AddSpan(second, 40, 45)->set_excluded(v1::EXCLUSION_TEMPLATE);
  const std::vector<AllocatedRange> r = AllocatePassages(reply, 100);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].start, 0u);
  EXPECT_EQ(r[0].end, 40u);
  EXPECT_EQ(r[0].source, 1);
  EXPECT_EQ(r[1].start, 60u);
  EXPECT_EQ(r[1].end, 70u);
  EXPECT_EQ(r[1].source, 0);
}

TEST(CheckHtmlReportTest, ExcludedPassagesAreShownWithTheirReasonAndLeftOutOfTheFigures) {
  const std::string own = "Our own words fill this first part of the text. ";
  const std::string quote = "\"A sentence the author quotes from the source.\"";
  const std::string copied = " Then a sentence copied from the source without quotes.";
  const std::string text = own + quote + copied;
  const auto q = static_cast<uint32_t>(own.size());
  const auto c = static_cast<uint32_t>(q + quote.size());
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.mutable_params()->set_exclude_quotes(true);
  reply.mutable_params()->set_min_match_units(6);
  reply.mutable_params()->add_template_collections("cfp");
  v1::ExcludedPassage* e = reply.add_excluded();
  e->set_test_start(q);
  e->set_test_end(c);
  e->set_reason(v1::EXCLUSION_QUOTE);
  v1::Match* m = reply.add_matches();
  m->set_doc_id(7);
  m->set_ratio(0.5);
  m->set_violation(true);
  AddSpan(m, q + 1, c - 1)->set_excluded(v1::EXCLUSION_QUOTE);
  AddSpan(m, c + 1, static_cast<uint32_t>(text.size()));
  v1::Match* t = reply.add_matches();
  t->set_doc_id(8);
  t->set_from_template(true);
  CheckHtmlReport report(nullptr);
  report.Add("essay.txt", text, reply);
  const std::string page = report.Finish();

  // The quoted passage is marked as excluded, the copied one in the source's colour.
  EXPECT_NE(page.find("<mark class=excluded data-excluded=\"quote\" title=\"matched, but "
                      "excluded: quoted\">A sentence the author quotes from the source."
                      "</mark>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("Then a sentence copied from the source without quotes.</mark>"),
            std::string::npos);
  // The excluded parts with their reasons, the side-by-side row saying why.
  EXPECT_NE(page.find("<tr data-excluded=\"quote\"><td>quoted</td><td>bytes " + std::to_string(q) +
                      "-" + std::to_string(c) + "</td>"),
            std::string::npos);
  EXPECT_NE(page.find("&middot; excluded: quoted</span>"), std::string::npos);
  EXPECT_NE(page.find("template: never counts"), std::string::npos);
  // The overall figure is of the text not excluded.
  char overall[32];
  std::snprintf(overall, sizeof(overall), "%.1f%%",
                100.0 * (copied.size() - 1) / (text.size() - quote.size()));
  EXPECT_NE(page.find(std::string("<span class=figure>") + overall), std::string::npos) << overall;
  EXPECT_NE(page.find("<dt>exclusions</dt><dd>quotes, matches under 6 words, templates (cfp)"),
            std::string::npos);
}

TEST(CheckHtmlReportTest, PageShowsSourcesHighlightsAndSideBySideWithEverythingEscaped) {
  const std::string text =
      "Intro <b>bold</b> words. The copied passage sits here verbatim. Outro <script>x()"
      "</script>.";
  const uint32_t at = static_cast<uint32_t>(text.find("The copied"));
  const uint32_t end = static_cast<uint32_t>(text.find(" Outro"));
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.set_format("text");
  reply.mutable_params()->set_function("match_ratio");
  reply.mutable_params()->set_threshold(0.08);
  reply.mutable_params()->set_min_passage_units(8);
  v1::Match* m = reply.add_matches();
  m->set_doc_id(12);
  m->set_title("<img src=x onerror=alert(1)>");
  m->set_ratio(0.4);
  m->set_containment(0.9);
  m->set_violation(true);
  v1::Span* s = AddSpan(m, at, end);
  s->set_has_registered(true);
  s->set_registered_start(4);
  s->set_registered_end(4 + (end - at));
  v1::Match* hidden = reply.add_matches();
  hidden->set_doc_id(13);
  hidden->set_ratio(0.1);
  v1::Span* elsewhere = AddSpan(hidden, at, end);  // the same passage: counted for #12 only
  elsewhere->set_has_registered(true);
  elsewhere->set_registered_start(100);
  elsewhere->set_registered_end(140);

  const std::string registered =
      "xyz The copied passage sits here verbatim. <iframe src=evil></iframe>";
  CheckHtmlReport report([&](uint64_t id) -> std::optional<std::string> {
    if (id == 12) return registered;
    return std::nullopt;
  });
  report.Add("papers/<evil>.txt", text, reply);
  report.AddError("missing.txt", absl::NotFoundError("cannot read <missing>"));
  const std::string page = report.Finish();

  // Self-contained: no script, no external reference of any kind.
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<iframe"), std::string::npos);
  EXPECT_EQ(page.find("<b>"), std::string::npos);
  EXPECT_EQ(page.find("http:"), std::string::npos);
  EXPECT_EQ(page.find("https:"), std::string::npos);
  EXPECT_EQ(page.find("url("), std::string::npos);
  EXPECT_EQ(page.find("src="), page.find("src=x onerror"));  // only as escaped text
  EXPECT_NE(page.find("&lt;script&gt;x()&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(page.find("papers/&lt;evil&gt;.txt"), std::string::npos);
  EXPECT_NE(page.find("cannot read &lt;missing&gt;"), std::string::npos);

  // The passage highlighted in #12's colour; the overall figure counts it once.
  const std::string mark = "<mark style=\"background:" + SourceColour(0) + "\"";
  const size_t marked = page.find(mark);
  ASSERT_NE(marked, std::string::npos);
  EXPECT_NE(page.find("The copied passage sits here verbatim.</mark>", marked),
            std::string::npos);
  EXPECT_EQ(page.find("<mark style=\"background:" + SourceColour(1) + "\""), std::string::npos);
  char overall[32];
  std::snprintf(overall, sizeof(overall), "%.1f%%", 100.0 * (end - at) / text.size());
  EXPECT_NE(page.find(std::string("<span class=figure>") + overall), std::string::npos)
      << overall;
  // Side by side: the registered passage for #12, offsets only for #13.
  EXPECT_NE(page.find("<td class=passage>The copied passage sits here verbatim.</td>"),
            std::string::npos);
  EXPECT_NE(page.find("bytes 100-140 of the registered document (its text is not readable here)"),
            std::string::npos);
  EXPECT_NE(page.find("match_ratio"), std::string::npos);  // the parameters
}

TEST(CompareHtmlReportTest, PairsSideBySideFromTheFilesAndHostileNamesEscaped) {
  testing::TempDir temp("cops_html");
  const std::filesystem::path& dir = temp.path();
  const std::string a = (dir / "a<1>.txt").string(), b = (dir / "b.txt").string();
  std::ofstream(a) << "Own words first. The shared <em>sentence</em> is here.";
  std::ofstream(b) << "The shared <em>sentence</em> is here. Then other words.";
  Comparison c;
  c.documents = {{a, absl::OkStatus(), "text", 9, 54}, {b, absl::OkStatus(), "text", 9, 54},
                 {(dir / "gone.txt").string(), absl::NotFoundError("cannot read <gone>"), "", 0, 0}};
  DocumentPair pair;
  pair.a = 0;
  pair.b = 1;
  pair.a_in_b = 0.75;
  pair.b_in_a = 0.6;
  pair.passages.push_back({17, 54, 0, 37, 5});
  c.pairs = {pair};
  c.clusters = {{0, 1}};
  c.min_passage_units = 4;
  std::vector<absl::StatusOr<v1::CheckDocumentReply>> corpus(3);
  corpus[2] = absl::NotFoundError("cannot read <gone>");
  const std::string page = CompareHtmlReport(c, DocumentFormat::kText, corpus);

  EXPECT_EQ(page.find("<em>"), std::string::npos);
  EXPECT_EQ(page.find("a<1>"), std::string::npos);
  EXPECT_NE(page.find("a&lt;1&gt;.txt"), std::string::npos);
  EXPECT_NE(page.find("cannot read &lt;gone&gt;"), std::string::npos);
  EXPECT_NE(page.find("75.0%"), std::string::npos);
  EXPECT_NE(page.find("60.0%"), std::string::npos);
  // Both sides of the passage, read back from the files.
  const std::string passage = "The shared &lt;em&gt;sentence&lt;/em&gt; is here.</td>";
  const size_t left = page.find(passage);
  ASSERT_NE(left, std::string::npos) << page;
  EXPECT_NE(page.find(passage, left + 1), std::string::npos);
  EXPECT_NE(page.find("<h2>Clusters</h2>"), std::string::npos);
  EXPECT_EQ(page.find("heavy revision"), std::string::npos);

  // A pair listed as a heavy revision says so, in the table and above its passages.
  c.heavy_revisions = true;
  c.pairs[0].heavy_revision = true;
  const std::string revised = CompareHtmlReport(c, DocumentFormat::kText, corpus);
  EXPECT_NE(revised.find("or heavy revisions of each other"), std::string::npos);
  EXPECT_NE(revised.find("1 (heavy revision)</td>"), std::string::npos);
  EXPECT_NE(revised.find("b is a heavy revision of a"), std::string::npos);
}

// The page as a person sees it: Debian's chromium parses and lays it out headless, and the
// DOM it ends with (--dump-dom) has the highlighted passages and the sources, and no element
// made from the documents' hostile text.
TEST(CheckHtmlReportTest, RenderedInChromiumShowsHighlightedPassagesAndSources) {
  if (access("/usr/bin/chromium", X_OK) != 0) {
    GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  }
  const std::string text = "Opening words of the essay. " + std::string(200, 'x') +
                           " <script>document.title='owned'</script> A passage copied from "
                           "the first source sits here. \"Words it quotes from the first "
                           "source.\" Then one from the second source.";
  const uint32_t first = static_cast<uint32_t>(text.find("A passage"));
  const uint32_t quote = static_cast<uint32_t>(text.find(" \"Words"));
  const uint32_t second = static_cast<uint32_t>(text.find(" Then"));
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.mutable_params()->set_exclude_quotes(true);
  v1::ExcludedPassage* excluded = reply.add_excluded();
  excluded->set_test_start(quote + 1);
  excluded->set_test_end(second);
  excluded->set_reason(v1::EXCLUSION_QUOTE);
  v1::Match* a = reply.add_matches();
  a->set_doc_id(1);
  a->set_title("First source");
  a->set_ratio(0.3);
  AddSpan(a, first, quote);
  AddSpan(a, quote + 2, second - 1)->set_excluded(v1::EXCLUSION_QUOTE);
  v1::Match* b = reply.add_matches();
  b->set_doc_id(2);
  b->set_title("Second <source>");
  b->set_ratio(0.2);
  AddSpan(b, second + 1, static_cast<uint32_t>(text.size()));
  CheckHtmlReport report(nullptr);
  report.Add("essay.txt", text, reply);

  testing::TempDir temp("cops_html");
  const std::filesystem::path& dir = temp.path();
  std::ofstream(dir / "report.html") << report.Finish();
  const std::string command = "/usr/bin/chromium --headless --no-sandbox --disable-gpu "
                              "--user-data-dir=" + (dir / "profile").string() +
                              " --dump-dom file://" + (dir / "report.html").string() +
                              " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string dom;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) dom.append(buf, n);
  const int status = pclose(pipe);
  ASSERT_EQ(status, 0) << dom;

  EXPECT_NE(dom.find("<title>COPS similarity report</title>"), std::string::npos) << dom;
  // Highlighted passages, each in its source's colour.
  EXPECT_NE(dom.find("background:" + SourceColour(0) + "\" title=\"#1 &quot;First source"
                     "&quot;\">A passage copied from the first source sits here.</mark>"),
            std::string::npos) << dom;
  EXPECT_NE(dom.find("background:" + SourceColour(1)), std::string::npos);
  EXPECT_NE(dom.find("Then one from the second source.</mark>"), std::string::npos);
  // The quoted passage: matched, rendered as excluded with its reason, counted for no one.
  EXPECT_NE(dom.find("<mark class=\"excluded\" data-excluded=\"quote\" title=\"matched, but "
                     "excluded: quoted\">Words it quotes from the first source.</mark>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("<tr data-excluded=\"quote\"><td>quoted</td>"), std::string::npos);
  EXPECT_NE(dom.find("<dd>quotes</dd>"), std::string::npos);
  // Sources listed, hostile text as text.
  EXPECT_NE(dom.find(">#1 \"First source\"</a>"), std::string::npos) << dom;
  EXPECT_NE(dom.find(">#2 \"Second &lt;source&gt;\"</a>"), std::string::npos) << dom;
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_EQ(dom.find("<source"), std::string::npos);
  EXPECT_NE(dom.find("&lt;script&gt;document.title="), std::string::npos);
}

TEST(CheckHtmlReportTest, AViolationByStemPairsAloneSaysSoInTheVerdictAndTheSources) {
  // A heavy revision: no shared passage, similarity 0, yet a violation by its source's
  // content-stem pairs; the page says which evidence decided.
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.set_stem_pairs(50);
  reply.set_stem_pairs_checked(true);
  v1::Match* m = reply.add_matches();
  m->set_doc_id(4);
  m->set_violation(true);
  m->set_stem_pair_violation(true);
  m->set_stem_pairs_shared(15);
  m->set_stem_pair_share(0.3);
  CheckHtmlReport report(nullptr);
  report.Add("essay.txt", "A rewritten essay.", reply);
  const std::string page = report.Finish();
  EXPECT_NE(page.find("decided by content-stem pairs"), std::string::npos) << page;
  EXPECT_NE(page.find("violation</span> by stem pairs (30"), std::string::npos) << page;
  // Flagged by its passages: the page says nothing of pairs.
  m->set_stem_pair_violation(false);
  m->set_chunk_violation(true);
  CheckHtmlReport by_chunks(nullptr);
  by_chunks.Add("essay.txt", "A copied essay.", reply);
  EXPECT_EQ(by_chunks.Finish().find("stem pairs"), std::string::npos);
}

TEST(CheckHtmlReportTest, AViolationAsAHeavyRevisionSaysSoInTheVerdictAndTheSources) {
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.mutable_params()->set_heavy_revisions(true);
  v1::Match* m = reply.add_matches();
  m->set_doc_id(4);
  m->set_ratio(0.03);
  m->set_violation(true);
  m->set_revision_violation(true);
  m->set_revision_grams(13);
  v1::Span* run = m->add_spans();  // "rewritten essay", a run kept in order
  run->set_test_start(2);
  run->set_test_end(17);
  run->set_units(2);
  run->set_revision_run(true);
  CheckHtmlReport report(nullptr);
  report.Add("essay.txt", "A rewritten essay.", reply);
  const std::string page = report.Finish();
  EXPECT_NE(page.find("decided by heavy revision (the source's 3-word runs kept in its order"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("violation</span> by heavy revision (13 3-word runs in order)"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<dt>heavy revisions</dt><dd>looked for</dd>"), std::string::npos) << page;
  // The run is shown side by side, marked, and counts for no share of the text.
  EXPECT_NE(page.find("<tr data-revision-run><td class=passage><span class=muted>bytes 2-17 "
                      "&middot; a run kept in the same order (heavy revision)</span>\n"
                      "rewritten essay"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("similarity <span class=figure>0.0%</span>"), std::string::npos) << page;
  const std::vector<AllocatedRange> counted = AllocatePassages(reply, 18);
  EXPECT_TRUE(counted.empty());
  m->set_revision_violation(false);
  m->set_chunk_violation(true);
  CheckHtmlReport by_chunks(nullptr);
  by_chunks.Add("essay.txt", "A copied essay.", reply);
  EXPECT_EQ(by_chunks.Finish().find("by heavy revision"), std::string::npos);
}

TEST(CheckHtmlReportTest, TextManipulationIsSaidWithKindCountAndPlace) {
  v1::CheckDocumentReply reply;
  v1::Manipulation* m = reply.add_manipulations();
  m->set_kind(v1::MANIPULATION_LOOK_ALIKE);
  m->set_count(4);
  v1::ExcludedPassage* r = m->add_ranges();
  r->set_test_start(3);
  r->set_test_end(9);
  v1::Manipulation* h = reply.add_manipulations();
  h->set_kind(v1::MANIPULATION_HIDDEN_TEXT);
  h->set_count(1);
  v1::Manipulation* i = reply.add_manipulations();
  i->set_kind(v1::MANIPULATION_IMAGE_IN_WORD);
  i->set_count(2);
  CheckHtmlReport report(nullptr);
  report.Add("essay.txt", "An essay with look-alike letters.", reply);
  const std::string page = report.Finish();
  EXPECT_NE(page.find("text manipulation suspected"), std::string::npos);
  EXPECT_NE(page.find("<tr data-manipulation=\"look_alike\"><td>look-alike letters folded</td>"
                      "<td class=num>4</td><td>bytes 3-9</td></tr>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<tr data-manipulation=\"hidden_text\"><td>hidden text found</td>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr data-manipulation=\"image_in_word\"><td>letters replaced by images"
                      "</td><td class=num>2</td>"),
            std::string::npos);
  CheckHtmlReport clean(nullptr);
  clean.Add("essay.txt", "An essay.", v1::CheckDocumentReply());
  EXPECT_EQ(clean.Finish().find("manipulation"), std::string::npos);
}

}  // namespace
}  // namespace cops
