#include "client/check_report.h"

#include <algorithm>
#include <cstdio>

#include "core/exclusions.h"
#include "core/manipulation.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

using nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view Reason(v1::Exclusion e) { return ExclusionName(static_cast<Exclusion>(e)); }

std::string_view KindName(v1::ManipulationKind k) {
  return ManipulationKindName(static_cast<ManipulationKind>(k));
}

json CheckJson(const v1::CheckDocumentReply& r) {
  json matches = json::array();
  for (const v1::Match& m : r.matches()) {
    json spans = json::array();
    for (const v1::Span& s : m.spans()) {
      json span = {{"test_start", s.test_start()}, {"test_end", s.test_end()},
                   {"chunks", s.chunks()}, {"units", s.units()}};
      if (s.has_registered()) {
        span["registered_start"] = s.registered_start();
        span["registered_end"] = s.registered_end();
      }
      if (s.test_first_page() != 0) {
        span["test_first_page"] = s.test_first_page();
        span["test_last_page"] = s.test_last_page();
      }
      if (r.offsets_in_extracted_text()) span["test_text"] = s.test_text();
      if (s.excluded() != v1::EXCLUSION_NONE) span["excluded"] = Reason(s.excluded());
      if (s.revision_run()) span["revision_run"] = true;
      spans.push_back(std::move(span));
    }
    json match = {{"doc_id", m.doc_id()},
                  {"title", m.title()},
                  {"owner", m.owner()},
                  {"collection", m.collection()},
                  {"ratio", m.ratio()},
                  {"containment", m.containment()},
                  {"matched_chunks", m.matched_chunks()},
                  {"ordered_matches", m.ordered_matches()},
                  {"stored_chunks", m.stored_chunks()},
                  {"violation", m.violation()},
                  {"spans", std::move(spans)}};
    if (m.from_template()) match["template"] = true;
    // With content-stem pairs or heavy revisions only, so that other replies keep their
    // pinned form.
    if (r.stem_pairs_checked()) {
      match["stem_pairs_shared"] = m.stem_pairs_shared();
      match["stem_pair_share"] = m.stem_pair_share();
    }
    if (r.params().heavy_revisions()) match["revision_grams"] = m.revision_grams();
    if (r.stem_pairs_checked() || r.params().heavy_revisions()) {
      json decided_by = json::array();
      if (m.violation() && ChunkViolation(m)) decided_by.push_back("chunks");
      if (m.violation() && m.stem_pair_violation()) decided_by.push_back("stem_pairs");
      if (m.violation() && m.revision_violation()) decided_by.push_back("heavy_revision");
      match["decided_by"] = std::move(decided_by);
    }
    matches.push_back(std::move(match));
  }
  json excluded = json::array();
  for (const v1::ExcludedPassage& e : r.excluded()) {
    excluded.push_back({{"test_start", e.test_start()},
                        {"test_end", e.test_end()},
                        {"reason", Reason(e.reason())}});
  }
  // "text manipulation suspected": present only when some was found.
  json manipulation = json::array();
  for (const v1::Manipulation& m : r.manipulations()) {
    json ranges = json::array();
    for (const v1::ExcludedPassage& e : m.ranges()) {
      ranges.push_back({{"test_start", e.test_start()}, {"test_end", e.test_end()}});
    }
    manipulation.push_back(
        {{"kind", KindName(m.kind())}, {"count", m.count()}, {"ranges", std::move(ranges)}});
  }
  const v1::CheckParams& p = r.params();
  json out = {
      {"violation", r.violation()},
      {"chunks", r.total_chunks()},
      {"selected_chunks", r.selected_chunks()},
      {"considered_chunks", r.considered_chunks()},
      {"common_chunks_ignored", r.common_chunks_ignored()},
      {"sampled", r.sampled()},
      {"sampling_error", r.sampling_error()},
      {"format", r.format()},
      {"charset", r.charset()},
      {"offsets_in_extracted_text", r.offsets_in_extracted_text()},
      {"verified", r.verified()},
      {"matches", std::move(matches)},
      {"excluded", std::move(excluded)},
      {"params",
       {{"chunking", p.chunking()},
        {"function", p.function()},
        {"threshold", p.threshold()},
        {"min_count", p.min_count()},
        {"max_results", p.max_results()},
        {"max_doc_frequency", p.max_doc_frequency()},
        {"min_passage_units", p.min_passage_units()},
        {"sample_size", p.sample_size()},
        {"sample_seed", p.sample_seed()},
        {"want_spans", p.want_spans()},
        {"verify_k", p.verify_k()},
        {"exclude_quotes", p.exclude_quotes()},
        {"exclude_references", p.exclude_references()},
        {"min_match_units", p.min_match_units()},
        {"min_violation_units", p.min_violation_units()},
        {"heavy_revisions", p.heavy_revisions()},
        {"template_collections", std::vector<std::string>(p.template_collections().begin(),
                                                          p.template_collections().end())}}}};
  if (!manipulation.empty()) out["manipulation"] = std::move(manipulation);
  if (r.stem_pairs_checked() || r.stem_pairs() > 0) {
    out["stem_pairs"] = r.stem_pairs();
    out["stem_pairs_checked"] = r.stem_pairs_checked();
  }
  return out;
}

}  // namespace

std::string ExclusionsText(const v1::CheckParams& p) {
  std::string out;
  auto add = [&out](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
  if (p.exclude_quotes()) add("quotes");
  if (p.exclude_references()) add("references");
  if (p.min_match_units() > 0) {
    add("matches under " + std::to_string(p.min_match_units()) + " words");
  }
  if (p.template_collections_size() > 0) {
    std::string names;
    for (const std::string& c : p.template_collections()) names += (names.empty() ? "" : " ") + c;
    add("templates (" + names + ")");
  }
  return out.empty() ? "none" : out;
}

bool ChunkViolation(const v1::Match& m) {
  return m.chunk_violation() ||
         (m.violation() && !m.stem_pair_violation() && !m.revision_violation());
}

std::string DecidedByText(const v1::Match& m) {
  if (!m.violation()) return "";
  std::string out;
  auto add = [&out](const char* what) { out += (out.empty() ? "" : " and ") + std::string(what); };
  if (ChunkViolation(m)) add("chunks");
  if (m.stem_pair_violation()) add("stem pairs");
  if (m.revision_violation()) add("heavy revision");
  return out;
}

std::string ExclusionLabel(v1::Exclusion e) {
  switch (e) {
    case v1::EXCLUSION_QUOTE:
      return "quoted";
    case v1::EXCLUSION_REFERENCES:
      return "in the references";
    case v1::EXCLUSION_TEMPLATE:
      return "shared with a template";
    case v1::EXCLUSION_SHORT_MATCH:
      return "shorter than the minimum match";
    case v1::EXCLUSION_COMMON_PHRASE:
      return "common text of the registered documents";
    default:
      return "";
  }
}

std::string ManipulationLabel(v1::ManipulationKind k) {
  switch (k) {
    case v1::MANIPULATION_LOOK_ALIKE:
      return "look-alike letters folded";
    case v1::MANIPULATION_INVISIBLE:
      return "invisible characters removed";
    case v1::MANIPULATION_HIDDEN_TEXT:
      return "hidden text found";
    case v1::MANIPULATION_IMAGE_IN_WORD:
      return "letters replaced by images";
    default:
      return "";
  }
}

std::string ManipulationText(const v1::CheckDocumentReply& r) {
  if (r.manipulations_size() == 0) return "";
  std::string out = "text manipulation suspected:";
  for (const v1::Manipulation& m : r.manipulations()) {
    out += " " + ManipulationLabel(m.kind()) + " (" + std::to_string(m.count()) + ", at";
    for (const v1::ExcludedPassage& e : m.ranges()) {
      out += " " + std::to_string(e.test_start()) + "-" + std::to_string(e.test_end());
    }
    if (static_cast<size_t>(m.ranges_size()) >= kMaxManipulationRanges) out += " ...";
    out += ");";
  }
  return out;
}

std::string StatusText(const absl::Status& s) {
  return std::string(absl::StatusCodeToString(s.code())) + ": " + std::string(s.message());
}

std::string CheckJsonLine(const v1::CheckDocumentReply& reply,
                          const std::optional<std::string>& path) {
  json j = CheckJson(reply);
  if (path) j["path"] = *path;
  if (reply.partial()) {  // a router's answer without some partitions (docs/scale-out.md)
    j["partial"] = true;
    j["missing_partitions"] = std::vector<uint32_t>(reply.missing_partitions().begin(),
                                                    reply.missing_partitions().end());
  }
  return Dump(j);
}

std::string ErrorJsonLine(const std::string& path, const absl::Status& error) {
  return Dump({{"path", path}, {"error", StatusText(error)}});
}

std::string Excerpt(const std::string& text, uint32_t start, uint32_t end, bool tty) {
  constexpr uint32_t kContext = 40, kMaxPassage = 600;
  start = std::min<uint32_t>(start, text.size());
  end = std::clamp<uint32_t>(end, start, text.size());
  const uint32_t before = start > kContext ? start - kContext : 0;
  const uint32_t after = std::min<uint32_t>(text.size(), end + kContext);
  std::string passage = text.substr(start, end - start);
  if (passage.size() > kMaxPassage) {
    passage = passage.substr(0, kMaxPassage / 2) + " [...] " +
              passage.substr(passage.size() - kMaxPassage / 2);
  }
  std::string out = (before > 0 ? "..." : "") + text.substr(before, start - before);
  out += tty ? "\033[1;31m" : "[[";
  out += passage;
  out += tty ? "\033[0m" : "]]";
  out += text.substr(end, after - end) + (after < text.size() ? "..." : "");
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return out;
}

void PrintCheckHuman(const v1::CheckDocumentReply& r, const std::string& text, bool tty,
                     std::ostream& out) {
  if (r.partial()) {
    out << "PARTIAL ANSWER: no replica of partition(s)";
    for (uint32_t p : r.missing_partitions()) out << " " << p;
    out << " answered; their documents were not searched\n";
  }
  out << (r.violation() ? "VIOLATION" : "no violation") << ": " << r.matches_size()
      << " registered document(s) share passages; test document has " << r.total_chunks()
      << " chunks, " << r.selected_chunks() << " looked up";
  if (r.sampled()) out << " (sampled, error " << r.sampling_error() << ")";
  if (r.verified()) {
    out << "; verified on " << r.considered_chunks() << " word " << r.params().verify_k()
        << "-grams";
  }
  if (r.stem_pairs_checked()) out << "; " << r.stem_pairs() << " content-stem pairs compared";
  out << "\n";
  const std::string manipulation = ManipulationText(r);
  if (!manipulation.empty()) out << manipulation << "\n";
  if (r.excluded_size() > 0) {
    out << "excluded, not counted:";
    for (const v1::ExcludedPassage& e : r.excluded()) {
      out << " " << ExclusionLabel(e.reason()) << " " << e.test_start() << "-" << e.test_end()
          << ";";
    }
    out << "\n";
  }
  for (const v1::Match& m : r.matches()) {
    char figures[160];
    std::snprintf(figures, sizeof(figures), "  ratio %.3f  containment %.3f  matched %u/%u  ",
                  m.ratio(), m.containment(), m.matched_chunks(), r.considered_chunks());
    out << "\n#" << m.doc_id() << " "
        << (m.title().empty() ? std::string("(untitled)") : "\"" + m.title() + "\"")
        << (m.owner().empty() ? "" : "  owner ") << m.owner() << figures
        << (m.from_template() ? "TEMPLATE (never counts)"
            : m.violation()   ? (r.stem_pairs_checked() || r.params().heavy_revisions()
                                     ? "VIOLATION by " + DecidedByText(m)
                                     : std::string("VIOLATION"))
                              : "below the decision")
        << "\n";
    if (r.stem_pairs_checked() && m.stem_pairs_shared() > 0) {
      char pairs[120];
      std::snprintf(pairs, sizeof(pairs), "  stem pairs %u/%u (%.3f)%s\n", m.stem_pairs_shared(),
                    r.stem_pairs(), m.stem_pair_share(),
                    m.spans_size() == 0 ? ": its content words, side by side, without a passage"
                                        : "");
      out << pairs;
    }
    if (m.revision_violation()) {
      out << "  heavy revision: " << m.revision_grams()
          << " of its 3-word runs in the order of both texts, scattered (docs/accuracy.md)\n";
    }
    for (const v1::Span& s : m.spans()) {
      const std::string excluded = s.revision_run() ? "  [run kept in the same order]"
                                   : s.excluded() == v1::EXCLUSION_NONE
                                       ? ""
                                       : "  [excluded: " + ExclusionLabel(s.excluded()) + "]";
      if (!r.offsets_in_extracted_text()) {
        out << "  bytes " << s.test_start() << "-" << s.test_end() << ": "
            << Excerpt(text, s.test_start(), s.test_end(), tty) << excluded << "\n";
        continue;
      }
      // PDF, DOCX, ODT, email: the offsets index the extracted text, which the server sent.
      out << "  ";
      if (s.test_first_page() != 0) {
        out << "page " << s.test_first_page();
        if (s.test_last_page() != s.test_first_page()) out << "-" << s.test_last_page();
        out << ", ";
      }
      out << "text " << s.test_start() << "-" << s.test_end() << ": "
          << Excerpt(s.test_text(), 0, static_cast<uint32_t>(s.test_text().size()), tty) << excluded
          << "\n";
    }
  }
  out << "\nparams: " << r.params().function() << " threshold " << r.params().threshold()
      << (r.params().heavy_revisions() ? "; heavy revisions looked for" : "")
      << "; exclusions: " << ExclusionsText(r.params()) << "; " << r.params().chunking() << "\n";
}

std::string BatchLine(const std::string& path, const absl::Status& error,
                      const v1::CheckDocumentReply* reply) {
  if (!error.ok() || reply == nullptr) return "ERROR      " + path + ": " + StatusText(error);
  std::string line = reply->violation() ? "VIOLATION  " : reply->partial() ? "PARTIAL    " : "ok         ";
  line += path;
  if (reply->matches_size() > 0) {
    const v1::Match& best = reply->matches(0);
    char figure[64];
    std::snprintf(figure, sizeof(figure), "  best %.3f #", best.ratio());
    line += figure + std::to_string(best.doc_id());
    if (!best.title().empty()) line += " \"" + best.title() + "\"";
    if (reply->matches_size() > 1) {
      line += " (+" + std::to_string(reply->matches_size() - 1) + " more)";
    }
  }
  return line;
}

}  // namespace cops
