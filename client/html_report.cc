#include "client/html_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "client/check_report.h"
#include "convert/document_format.h"
#include "core/exclusions.h"
#include "core/manipulation.h"
#include "core/strings.h"

namespace cops {
namespace {

// Longest passage shown in a side-by-side cell; longer ones keep their two ends.
constexpr size_t kMaxCellBytes = 4000;

constexpr const char* kStyle = R"(<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:75em;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.25em;border-top:2px solid #ccc;padding-top:.8em;margin-top:2em}
h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;
vertical-align:top;text-align:left}th{background:#f3f3f3}td.num{text-align:right}
.swatch{display:inline-block;width:1.1em;height:1.1em;border:1px solid #888;vertical-align:middle}
pre.text,td.passage{white-space:pre-wrap;font:13px/1.4 ui-monospace,monospace;word-break:break-word}
pre.text{border:1px solid #ccc;padding:.8em;background:#fcfcfc}
td.passage{width:50%}
mark{color:inherit;padding:0 .1em}
mark.excluded{background:#e0e0e0;text-decoration:line-through;text-decoration-color:#888}
span.excluded{color:#777;background:#f1f1f1}
td.passage.excluded{background:#eee}
.violation{color:#b00;font-weight:bold}.ok{color:#070;font-weight:bold}.error{color:#b00}
.figure{font-size:1.3em;font-weight:bold}
.muted{color:#666}dl.params dt{font-weight:bold;float:left;clear:left;width:12em}
dl.params dd{margin-left:12.5em}
</style>)";

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * share);
  return buf;
}

// Length of the valid UTF-8 sequence at s[i], 0 when invalid.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t min = 0;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (d & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// text[start, end) escaped, cut in the middle past kMaxCellBytes.
std::string Cell(const std::string& text, uint32_t start, uint32_t end) {
  start = std::min<uint32_t>(start, text.size());
  end = std::clamp<uint32_t>(end, start, text.size());
  std::string_view v(text.data() + start, end - start);
  if (v.size() <= kMaxCellBytes) return EscapeHtml(v);
  return EscapeHtml(v.substr(0, kMaxCellBytes / 2)) + "<span class=muted> [...] </span>" +
         EscapeHtml(v.substr(v.size() - kMaxCellBytes / 2));
}

std::string SourceName(const v1::Match& m) {
  std::string name = "#" + std::to_string(m.doc_id());
  if (!m.title().empty()) name += " \"" + m.title() + "\"";
  if (!m.collection().empty()) name += " in " + m.collection();
  if (!m.owner().empty()) name += ", owner " + m.owner();
  return EscapeHtml(name);
}

std::string Swatch(const std::string& colour) {
  return "<span class=swatch style=\"background:" + colour + "\"></span>";
}

std::string Page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'\">\n<title>" +
         EscapeHtml(title) + "</title>\n" + kStyle + "</head><body>\n" + body +
         "</body></html>\n";
}

// Byte ranges of a text, each given to the first label that claims it.
class Painter {
 public:
  // Gives the parts of [start, end) (cut at text_bytes) that no earlier call took to `label`.
  void Paint(uint32_t start, uint32_t end, int label, uint32_t text_bytes) {
    start = std::min(start, text_bytes);
    end = std::clamp(end, start, text_bytes);
    // Walk the taken ranges overlapping [start, end) and fill the gaps between them.
    auto it = taken_.upper_bound(start);
    if (it != taken_.begin() && std::prev(it)->second.first > start) --it;
    while (start < end) {
      if (it == taken_.end() || it->first >= end) {
        taken_.emplace(start, std::make_pair(end, label));
        break;
      }
      if (it->first > start) taken_.emplace(start, std::make_pair(it->first, label));
      start = std::max(start, it->second.first);
      ++it;
    }
  }
  // The ranges taken, sorted; neighbours of the same label merged.
  std::vector<AllocatedRange> Ranges() const {
    std::vector<AllocatedRange> out;
    for (const auto& [start, v] : taken_) {
      if (!out.empty() && out.back().end == start && out.back().source == v.second) {
        out.back().end = v.first;
      } else {
        out.push_back({start, v.first, v.second});
      }
    }
    return out;
  }

 private:
  std::map<uint32_t, std::pair<uint32_t, int>> taken_;  // [start, end) -> label
};

// Labels of the text view besides the sources' indices: excluded matched passages and
// excluded parts of the text that nothing matched.
int MatchedExcludedLabel(v1::Exclusion e) { return -1 - static_cast<int>(e); }
int RegionExcludedLabel(v1::Exclusion e) { return -100 - static_cast<int>(e); }

// The text view: the counted passages in their sources' colours, the excluded passages
// (matched, then the excluded parts of the text) marked with their reasons.
std::string TextView(const std::string& content, const v1::CheckDocumentReply& reply,
                     const std::vector<AllocatedRange>& counted) {
  const auto size = static_cast<uint32_t>(content.size());
  Painter paint;
  for (const AllocatedRange& r : counted) paint.Paint(r.start, r.end, r.source, size);
  for (const v1::Match& m : reply.matches()) {
    for (const v1::Span& s : m.spans()) {
      if (s.excluded() != v1::EXCLUSION_NONE) {
        paint.Paint(s.test_start(), s.test_end(), MatchedExcludedLabel(s.excluded()), size);
      }
    }
  }
  for (const v1::ExcludedPassage& e : reply.excluded()) {
    paint.Paint(e.test_start(), e.test_end(), RegionExcludedLabel(e.reason()), size);
  }
  const std::string_view text(content);
  std::string out = "<pre class=text>";
  uint32_t at = 0;
  for (const AllocatedRange& r : paint.Ranges()) {
    out += EscapeHtml(text.substr(at, r.start - at));
    const std::string passage = EscapeHtml(text.substr(r.start, r.end - r.start));
    if (r.source >= 0) {
      StrAppend(&out, "<mark style=\"background:", SourceColour(r.source), "\" title=\"",
                SourceName(reply.matches(r.source)), "\">", passage, "</mark>");
    } else {
      const bool matched = r.source > -100;
      const auto reason = static_cast<v1::Exclusion>(matched ? -1 - r.source : -100 - r.source);
      StrAppend(&out, matched ? "<mark" : "<span", " class=excluded data-excluded=\"",
                ExclusionName(static_cast<Exclusion>(reason)), "\" title=\"",
                matched ? "matched, but excluded: " : "excluded: ", ExclusionLabel(reason), "\">",
                passage, matched ? "</mark>" : "</span>");
    }
    at = r.end;
  }
  return out + EscapeHtml(text.substr(at)) + "</pre>\n";
}

// Bytes of the text inside the reply's excluded parts (disjoint, as the server sends them).
uint64_t ExcludedBytes(const v1::CheckDocumentReply& reply, size_t text_bytes) {
  uint64_t n = 0;
  for (const v1::ExcludedPassage& e : reply.excluded()) {
    const uint64_t start = std::min<uint64_t>(e.test_start(), text_bytes);
    n += std::clamp<uint64_t>(e.test_end(), start, text_bytes) - start;
  }
  return n;
}

std::string ParamsList(const v1::CheckParams& p) {
  std::string out = "<dl class=params>";
  auto row = [&](const std::string& k, const std::string& v) {
    out += "<dt>" + k + "</dt><dd>" + EscapeHtml(v) + "</dd>";
  };
  row("decision", p.function());
  char threshold[32];
  std::snprintf(threshold, sizeof(threshold), "%g", p.threshold());
  row("threshold", threshold);
  row("min. passage", std::to_string(p.min_passage_units()) + " words");
  row("max. results", p.max_results() == 0 ? "all" : std::to_string(p.max_results()));
  row("common chunks", p.max_doc_frequency() == 0
                           ? "all counted"
                           : "ignored past " + std::to_string(p.max_doc_frequency()) +
                                 " documents");
  row("sampling", p.sample_size() == 0 ? "none" : std::to_string(p.sample_size()) + " chunks");
  row("verification", p.verify_k() == 0 ? "none"
                                        : "word " + std::to_string(p.verify_k()) + "-grams");
  row("heavy revisions", p.heavy_revisions() ? "looked for" : "not looked for");
  row("exclusions", ExclusionsText(p));
  row("chunking", p.chunking());
  return out + "</dl>\n";
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      case '\0': out += "\xEF\xBF\xBD"; ++i; continue;
      default: break;
    }
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string SourceColour(size_t i) {
  static const char* const kPalette[] = {"#ffd54f", "#81d4fa", "#a5d6a7", "#f48fb1",
                                         "#ce93d8", "#ffab91", "#80cbc4", "#e6ee9c",
                                         "#b0bec5", "#ffcc80", "#9fa8da", "#bcaaa4"};
  return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

std::vector<AllocatedRange> AllocatePassages(const v1::CheckDocumentReply& reply,
                                             uint32_t text_bytes) {
  Painter taken;
  for (int m = 0; m < reply.matches_size(); ++m) {
    for (const v1::Span& s : reply.matches(m).spans()) {
      if (s.excluded() == v1::EXCLUSION_NONE && !s.revision_run()) {
        taken.Paint(s.test_start(), s.test_end(), m, text_bytes);
      }
    }
  }
  return taken.Ranges();
}

RegisteredTextFn RegisteredTextFrom(Client* client) {
  auto cache = std::make_shared<std::map<uint64_t, std::optional<std::string>>>();
  return [client, cache](uint64_t doc_id) -> std::optional<std::string> {
    auto it = cache->find(doc_id);
    if (it != cache->end()) return it->second;
    std::optional<std::string> text;
    absl::StatusOr<v1::DocumentInfo> info = client->Get(doc_id, /*include_content=*/true);
    // Registered offsets are bytes of the document as registered: readable for the formats
    // whose offsets index their input (the text formats).
    absl::StatusOr<DocumentFormat> format =
        info.ok() ? ParseDocumentFormat(info->format()) : info.status();
    if (format.ok() && *format != DocumentFormat::kAuto && !SpansIndexExtractedText(*format)) {
      text = info->content();
    }
    if (cache->size() >= 256) cache->clear();
    cache->emplace(doc_id, text);
    return text;
  };
}

void CheckHtmlReport::Add(const std::string& path, const std::string& content,
                          const v1::CheckDocumentReply& reply) {
  const size_t n = documents_++;
  const std::string anchor = "doc-" + std::to_string(n);
  const bool extracted = reply.offsets_in_extracted_text();
  std::vector<double> allocated(reply.matches_size(), 0);
  double overall = 0;
  std::vector<AllocatedRange> ranges;
  // The text that counts: all of it but its excluded parts.
  const uint64_t counted_bytes = content.size() - ExcludedBytes(reply, content.size());
  if (!extracted && counted_bytes > 0) {
    ranges = AllocatePassages(reply, static_cast<uint32_t>(content.size()));
    for (const AllocatedRange& r : ranges) {
      const double share = static_cast<double>(r.end - r.start) / counted_bytes;
      allocated[r.source] += share;
      overall += share;
    }
  } else if (extracted) {
    // No text to measure bytes on: the best source's share is the overall figure.
    for (const v1::Match& m : reply.matches()) overall = std::max(overall, m.ratio());
  }
  const std::string verdict = reply.violation() ? "<span class=violation>VIOLATION</span>"
                                                : "<span class=ok>no violation</span>";
  // Which evidence flagged the sources: a violation by content-stem pairs alone may have
  // a similarity near 0 and no marked passage, so the verdict line says why.
  bool by_chunks = false, by_pairs = false, by_revision = false;
  for (const v1::Match& m : reply.matches()) {
    if (!m.violation()) continue;
    by_chunks |= ChunkViolation(m);
    by_pairs |= m.stem_pair_violation();
    by_revision |= m.revision_violation();
  }
  std::string decided_by;
  if (by_pairs || by_revision) {
    std::string what;
    auto add = [&what](const char* w) { what += (what.empty() ? "" : " and ") + std::string(w); };
    if (by_chunks) add("matched passages");
    if (by_pairs) add("content-stem pairs");
    if (by_revision) add("heavy revision");
    decided_by = " &middot; decided by " + what;
    if (!by_chunks) {
      decided_by += by_pairs ? " (the sources' content words, side by side, without a shared "
                               "passage)"
                             : " (the source's 3-word runs kept in its order, scattered, "
                               "without a passage long enough to count)";
    }
  }
  summary_rows_ += "<tr><td><a href=\"#" + anchor + "\">" + EscapeHtml(path) + "</a></td><td>" +
                   verdict + "</td><td class=num>" + Percent(overall) + "</td><td class=num>" +
                   std::to_string(reply.matches_size()) + "</td></tr>\n";

  std::string& s = sections_;
  s += "<section id=\"" + anchor + "\"><h2>" + EscapeHtml(path) + "</h2>\n<p>" + verdict +
       " &middot; similarity <span class=figure>" + Percent(overall) + "</span> " +
       (extracted ? "(the best source's share of the text)"
                  : "of the text is inside matched passages, each counted once") +
       (reply.excluded_size() > 0 ? " (of the text not excluded)" : "") + " &middot; " +
       std::to_string(reply.matches_size()) + " source(s) &middot; format " +
       EscapeHtml(reply.format()) + decided_by +
       (reply.manipulations_size() > 0
            ? " &middot; <span class=violation>text manipulation suspected</span>"
            : "") +
       "</p>\n";
  if (reply.matches_size() > 0) {
    s += "<h3>Sources</h3>\n<table class=sources><tr><th></th><th>source</th>"
         "<th>counted for it</th><th>share of this text found in it</th>"
         "<th>share of it found here</th><th>decision</th></tr>\n";
    for (int m = 0; m < reply.matches_size(); ++m) {
      const v1::Match& match = reply.matches(m);
      s += "<tr><td>" + Swatch(SourceColour(m)) + "</td><td><a href=\"#" + anchor + "-src-" +
           std::to_string(m) + "\">" + SourceName(match) + "</a></td><td class=num>" +
           (extracted ? std::string("&ndash;") : Percent(allocated[m])) + "</td><td class=num>" +
           Percent(match.ratio()) + "</td><td class=num>" + Percent(match.containment()) +
           "</td><td>" +
           (match.from_template() ? "<span class=muted>template: never counts</span>"
            : match.violation() && match.stem_pair_violation()
                ? "<span class=violation>violation</span> by " + DecidedByText(match) + " (" +
                      Percent(match.stem_pair_share()) + " of the pairs)"
            : match.violation() && match.revision_violation()
                ? "<span class=violation>violation</span> by " + DecidedByText(match) + " (" +
                      std::to_string(match.revision_grams()) + " 3-word runs in order)"
            : match.violation() ? "<span class=violation>violation</span>"
                                : "below") +
           "</td></tr>\n";
    }
    s += "</table>\n";
  }
  if (reply.manipulations_size() > 0) {
    s += "<h3 class=manipulation>Text manipulation suspected</h3>\n<p class=muted>The text was "
         "doctored in ways that hide a copy from a character-by-character comparison; COPS "
         "folds look-alike letters and drops invisible characters before it compares, and "
         "compares hidden text and words cut by images as extracted.</p>\n"
         "<table class=manipulation><tr><th>what</th><th>how many</th><th>where</th></tr>\n";
    for (const v1::Manipulation& m : reply.manipulations()) {
      std::string where;
      for (const v1::ExcludedPassage& e : m.ranges()) {
        StrAppend(&where, where.empty() ? "" : ", ", e.test_start(), "-", e.test_end());
      }
      if (static_cast<size_t>(m.ranges_size()) >= kMaxManipulationRanges) where += ", ...";
      StrAppend(&s, "<tr data-manipulation=\"",
                ManipulationKindName(static_cast<ManipulationKind>(m.kind())), "\"><td>",
                ManipulationLabel(m.kind()), "</td><td class=num>", m.count(), "</td><td>",
                extracted ? "text " : "bytes ", where, "</td></tr>\n");
    }
    s += "</table>\n";
  }
  if (reply.excluded_size() > 0) {
    s += "<h3>Excluded</h3>\n<p class=muted>These parts of the text do not count: matches "
         "inside them are shown struck through and are not in the figures.</p>\n"
         "<table class=excluded><tr><th>why</th><th>where</th><th>text</th></tr>\n";
    for (const v1::ExcludedPassage& e : reply.excluded()) {
      StrAppend(&s, "<tr data-excluded=\"", ExclusionName(static_cast<Exclusion>(e.reason())),
                "\"><td>", ExclusionLabel(e.reason()), "</td><td>", extracted ? "text " : "bytes ",
                e.test_start(), "-", e.test_end(), "</td><td class=passage>",
                extracted
                    ? ""
                    : Cell(content, e.test_start(), std::min(e.test_end(), e.test_start() + 300)),
                "</td></tr>\n");
    }
    s += "</table>\n";
  }
  if (!extracted) s += "<h3>Text</h3>\n" + TextView(content, reply, ranges);
  for (int m = 0; m < reply.matches_size(); ++m) {
    const v1::Match& match = reply.matches(m);
    const std::optional<std::string> registered =
        registered_text_ ? registered_text_(match.doc_id()) : std::nullopt;
    s += "<h3 id=\"" + anchor + "-src-" + std::to_string(m) + "\">" +
         Swatch(SourceColour(m)) + " " + SourceName(match) + "</h3>\n";
    s += "<table class=sbs><tr><th>this document</th><th>" + SourceName(match) + "</th></tr>\n";
    for (const v1::Span& span : match.spans()) {
      const std::string here =
          extracted ? EscapeHtml(span.test_text())
                    : Cell(content, span.test_start(), span.test_end());
      std::string there;
      if (!span.has_registered()) {
        there = "<span class=muted>(where it is in the registered text is not shown to this "
                "caller)</span>";
      } else if (registered) {
        there = Cell(*registered, span.registered_start(), span.registered_end());
      } else {
        there = "<span class=muted>bytes " + std::to_string(span.registered_start()) + "-" +
                std::to_string(span.registered_end()) +
                " of the registered document (its text is not readable here)</span>";
      }
      std::string where;
      if (span.test_first_page() != 0) where = StrCat("page ", span.test_first_page(), ", ");
      StrAppend(&where, extracted ? "text " : "bytes ", span.test_start(), "-", span.test_end());
      if (span.revision_run()) {
        StrAppend(&where, " &middot; a run kept in the same order (heavy revision)");
        StrAppend(&s, "<tr data-revision-run><td class=passage>");
      } else if (span.excluded() == v1::EXCLUSION_NONE) {
        StrAppend(&s, "<tr><td class=passage style=\"background:", SourceColour(m), "33\">");
      } else {
        StrAppend(&where, " &middot; excluded: ", ExclusionLabel(span.excluded()));
        StrAppend(&s, "<tr data-excluded=\"",
                  ExclusionName(static_cast<Exclusion>(span.excluded())),
                  "\"><td class=\"passage excluded\">");
      }
      StrAppend(&s, "<span class=muted>", where, "</span>\n", here, "</td><td class=passage>",
                there, "</td></tr>\n");
    }
    s += "</table>\n";
  }
  s += "<h3>Parameters</h3>\n" + ParamsList(reply.params()) + "</section>\n";
}

void CheckHtmlReport::AddError(const std::string& path, const absl::Status& error) {
  ++documents_;
  summary_rows_ += "<tr><td>" + EscapeHtml(path) + "</td><td class=error>" +
                   EscapeHtml(StatusText(error)) + "</td><td></td><td></td></tr>\n";
}

std::string CheckHtmlReport::Finish() const {
  return Page("COPS similarity report",
              "<h1>COPS similarity report</h1>\n<p>" + std::to_string(documents_) +
                  " document(s) checked against the registered corpus.</p>\n"
                  "<table><tr><th>document</th><th>decision</th><th>similarity</th>"
                  "<th>sources</th></tr>\n" +
                  summary_rows_ + "</table>\n" + sections_);
}

std::string CompareHtmlReport(const Comparison& c, DocumentFormat format,
                              const std::vector<absl::StatusOr<v1::CheckDocumentReply>>& corpus,
                              size_t max_pairs) {
  std::string body = "<h1>COPS compare report</h1>\n<p>" + std::to_string(c.documents.size()) +
                     " document(s), " + std::to_string(c.pairs.size()) +
                     " pair(s) sharing a passage of " + std::to_string(c.min_passage_units) +
                     " words or more" +
                     (c.heavy_revisions ? " or heavy revisions of each other" : "") + ", " +
                     std::to_string(c.clusters.size()) + " cluster(s).</p>\n";
  std::string failed;
  for (const ComparedDocument& d : c.documents) {
    if (!d.status.ok()) {
      failed += "<li>" + EscapeHtml(d.path) + ": <span class=error>" +
                EscapeHtml(StatusText(d.status)) + "</span></li>\n";
    }
  }
  if (!failed.empty()) body += "<h2>Not compared</h2>\n<ul>" + failed + "</ul>\n";

  body += "<h2>Pairs</h2>\n<table><tr><th>#</th><th>a</th><th>b</th><th>share of a in b</th>"
          "<th>share of b in a</th><th>passages</th></tr>\n";
  for (size_t k = 0; k < c.pairs.size(); ++k) {
    const DocumentPair& p = c.pairs[k];
    const std::string label = k < max_pairs ? "<a href=\"#pair-" + std::to_string(k) + "\">" +
                                                  std::to_string(k + 1) + "</a>"
                                            : std::to_string(k + 1);
    body += "<tr><td>" + label + "</td><td>" + EscapeHtml(c.documents[p.a].path) + "</td><td>" +
            EscapeHtml(c.documents[p.b].path) + "</td><td class=num>" + Percent(p.a_in_b) +
            "</td><td class=num>" + Percent(p.b_in_a) + "</td><td class=num>" +
            std::to_string(p.passages.size()) + (p.heavy_revision ? " (heavy revision)" : "") +
            "</td></tr>\n";
  }
  body += "</table>\n";
  if (!c.clusters.empty()) {
    body += "<h2>Clusters</h2>\n<ol>";
    for (const std::vector<size_t>& cluster : c.clusters) {
      body += "<li>";
      for (size_t i = 0; i < cluster.size(); ++i) {
        body += (i ? ", " : "") + EscapeHtml(c.documents[cluster[i]].path);
      }
      body += "</li>\n";
    }
    body += "</ol>\n";
  }
  for (size_t k = 0; k < c.pairs.size() && k < max_pairs; ++k) {
    const DocumentPair& p = c.pairs[k];
    absl::StatusOr<ConvertedDocument> a = ExtractText(c.documents[p.a].path, format);
    absl::StatusOr<ConvertedDocument> b = ExtractText(c.documents[p.b].path, format);
    body += "<h2 id=\"pair-" + std::to_string(k) + "\">" + std::to_string(k + 1) + ". " +
            EscapeHtml(c.documents[p.a].path) + " &harr; " + EscapeHtml(c.documents[p.b].path) +
            "</h2>\n<p>" + Percent(p.a_in_b) + " of a is in b, " + Percent(p.b_in_a) +
            " of b is in a." +
            (p.heavy_revision ? " b is a heavy revision of a: it keeps these runs of a's words in "
                                "a's order, where its passages alone would not make it a copy."
                              : "") +
            "</p>\n<table class=sbs><tr><th>" + EscapeHtml(c.documents[p.a].path) + "</th><th>" +
            EscapeHtml(c.documents[p.b].path) + "</th></tr>\n";
    for (size_t i = 0; i < p.passages.size(); ++i) {
      const SharedPassage& s = p.passages[i];
      const std::string colour = SourceColour(i) + "55";
      StrAppend(&body, "<tr><td class=passage style=\"background:", colour, "\">",
                a.ok() ? Cell(a->text, s.a_start, s.a_end) : EscapeHtml(StatusText(a.status())),
                "</td><td class=passage style=\"background:", colour, "\">",
                b.ok() ? Cell(b->text, s.b_start, s.b_end) : EscapeHtml(StatusText(b.status())),
                "</td></tr>\n");
    }
    body += "</table>\n";
  }
  if (!corpus.empty()) {
    body += "<h2>Against the registered corpus</h2>\n<table><tr><th>document</th>"
            "<th>decision</th><th>best source</th><th>share of the document in it</th></tr>\n";
    for (size_t i = 0; i < corpus.size() && i < c.documents.size(); ++i) {
      const std::string path = EscapeHtml(c.documents[i].path);
      if (!corpus[i].ok()) {
        body += "<tr><td>" + path + "</td><td class=error colspan=3>" +
                EscapeHtml(StatusText(corpus[i].status())) + "</td></tr>\n";
        continue;
      }
      const v1::CheckDocumentReply& r = *corpus[i];
      body += "<tr><td>" + path + "</td><td>" +
              (r.violation() ? "<span class=violation>VIOLATION</span>" : "no violation") +
              "</td><td>" + (r.matches_size() ? SourceName(r.matches(0)) : "") +
              "</td><td class=num>" + (r.matches_size() ? Percent(r.matches(0).ratio()) : "") +
              "</td></tr>\n";
    }
    body += "</table>\n";
  }
  body += "<h2>Parameters</h2>\n<dl class=params><dt>min. passage</dt><dd>" +
          std::to_string(c.min_passage_units) + " words</dd><dt>verification</dt><dd>word " +
          std::to_string(c.verify_k) + "-grams</dd><dt>chunking</dt><dd>" + EscapeHtml(c.chunking) +
          " (" + EscapeHtml(c.chunking_from) + ")</dd></dl>\n";
  return Page("COPS compare report", body);
}

}  // namespace cops
