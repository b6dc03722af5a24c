#include "client/compare.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "client/batch_check.h"
#include "client/check_report.h"
#include "client/client.h"
#include "client/ordered_work.h"
#include "core/detect.h"
#include "core/fingerprint.h"
#include "core/hash_key.h"
#include "core/match.h"
#include "core/memory_index.h"
#include "core/status_macros.h"
#include "engine/pipeline.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

using nlohmann::json;

// A document converted and fingerprinted on a worker thread.
struct Prepared {
  ComparedDocument doc;
  DocumentFingerprint check;     // what it is checked with (unit spans, short texts in full)
  DocumentFingerprint register_;  // what it is added to the index with
};

// The run's key, from its documents' bytes: the same files give the same key, and so the
// same pairs, whatever their names and order; no one without every file of the batch can
// compute it. Hashes never leave this process, and the key reveals nothing about the
// server's. A file that cannot be read adds nothing (Prepare reports it). Each file is read
// here and again by Prepare: keeping the bytes would hold the whole batch in memory, which
// compare never does (compare.h). 10^4 files of 4 KB took as long as before (`scripts/bench.sh
// compare dedupe`: 2.88-2.95 s against 2.81-2.92).
absl::StatusOr<HashKey> BatchKey(const std::vector<std::string>& paths, int threads) {
  using Digest = std::array<uint8_t, 32>;
  std::vector<Digest> digests;
  digests.reserve(paths.size());
  RunOrdered<std::optional<Digest>>(
      paths.size(), threads, 4 * static_cast<size_t>(threads),
      [&]() -> std::function<std::optional<Digest>(size_t)> {
        return [&](size_t i) -> std::optional<Digest> {
          absl::StatusOr<std::string> content = ReadDocument(paths[i]);
          if (!content.ok()) return std::nullopt;
          return Sha256(*content);
        };
      },
      [&](std::optional<Digest>& d) {
        if (d.has_value()) digests.push_back(*d);
      });
  std::sort(digests.begin(), digests.end());
  std::string material = "cops compare batch key v1\n";
  for (const Digest& d : digests) {
    material.append(reinterpret_cast<const char*>(d.data()), d.size());
  }
  const Digest key = Sha256(material);
  return HashKey::FromBytes(
      std::string_view(reinterpret_cast<const char*>(key.data()), HashKey::kSize));
}

// `check`: the options the document is checked with (their revision_share asks for the
// text's short lines).
Prepared Prepare(const std::string& path, const CompareOptions& options, const CheckOptions& check,
                 const Fingerprinter& fingerprinter) {
  Prepared p;
  p.doc.path = path;
  absl::StatusOr<ConvertedDocument> converted = ExtractText(path, options.format);
  if (!converted.ok()) {
    p.doc.status = converted.status();
    return p;
  }
  p.doc.format = std::string(DocumentFormatName(converted->format));
  p.doc.text_bytes = converted->text.size();
  // Fingerprinted as copsd fingerprints what it checks and what it registers (no sampling,
  // every content-stem pair).
  CheckOptions every_pair = check;
  every_pair.stem_pair_max_lookups = 0;
  absl::Status s = CheckPrint(fingerprinter, converted->text, 0, 0, every_pair, &p.check);
  if (s.ok()) s = RegisterPrint(fingerprinter, converted->text, &p.register_);
  if (s.ok() && p.check.grams.empty()) {
    s = absl::InvalidArgumentError(path + ": no words to compare");
  }
  p.doc.status = s;
  p.doc.words = p.check.total_units;
  return p;
}

// Union-find over the listed pairs.
std::vector<std::vector<size_t>> Clusters(size_t n, const std::vector<DocumentPair>& pairs) {
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const DocumentPair& p : pairs) {
    const size_t ra = find(p.a), rb = find(p.b);
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
  std::vector<std::vector<size_t>> by_root(n);
  for (size_t i = 0; i < n; ++i) by_root[find(i)].push_back(i);
  std::vector<std::vector<size_t>> clusters;
  for (std::vector<size_t>& c : by_root) {
    if (c.size() >= 2) clusters.push_back(std::move(c));
  }
  std::stable_sort(clusters.begin(), clusters.end(),
                   [](const auto& x, const auto& y) { return x.size() > y.size(); });
  return clusters;
}

}  // namespace

absl::StatusOr<ConvertedDocument> ExtractText(const std::string& path, DocumentFormat format) {
  COPS_ASSIGN_OR_RETURN(std::string content, ReadDocument(path));
  if (absl::Status valid = ValidateInput(content, format, UINT64_MAX); !valid.ok()) {
    return absl::Status(valid.code(), path + ": " + std::string(valid.message()));
  }
  absl::StatusOr<ConvertedDocument> converted = Convert(content, format);
  if (!converted.ok()) {
    return absl::Status(converted.status().code(),
                        path + ": " + std::string(converted.status().message()));
  }
  return converted;
}

absl::StatusOr<ChunkingParams> ServerChunkingParams(Client* client) {
  absl::StatusOr<v1::GetStatsReply> stats = client->Stats();
  std::string description;
  if (stats.ok()) {
    description = stats->chunking();
  } else if (stats.status().code() == absl::StatusCode::kPermissionDenied) {
    v1::CheckDocumentRequest probe;
    probe.set_content("cops");
    probe.set_format(v1::DOCUMENT_FORMAT_TEXT);
    COPS_ASSIGN_OR_RETURN(v1::CheckDocumentReply reply, client->Check(probe));
    description = reply.params().chunking();
  } else {
    return stats.status();
  }
  return ChunkingParams::ParseDescription(description);
}

absl::StatusOr<Comparison> CompareFiles(
    const std::vector<std::string>& paths, const CompareOptions& options,
    const std::function<void(size_t done, const std::string& path)>& progress) {
  const int threads = std::max(options.threads, 1);
  absl::StatusOr<HashKey> key = BatchKey(paths, threads);
  if (!key.ok()) return absl::InternalError(std::string(key.status().message()));
  ChunkingParams params = options.params.value_or(ChunkingParams{});
  if (params.verify_k == 0) params.verify_k = kDefaultVerifyK;  // passages need grams
  params.key_id = key->Id();
  absl::StatusOr<std::unique_ptr<Fingerprinter>> made = Fingerprinter::Create(params, *key);
  if (!made.ok()) return absl::InternalError(std::string(made.status().message()));
  const Fingerprinter& fingerprinter = **made;

  Comparison out;
  out.chunking = params.Describe();
  out.chunking_from = options.params ? "server" : "defaults";
  out.verify_k = params.verify_k;
  out.min_passage_units = options.min_passage_units;
  out.heavy_revisions = options.heavy_revisions;
  MemoryIndex index;
  std::vector<std::vector<UnitSpan>> units;  // of each document, to place its passages
  DetectOptions detect;
  detect.check.min_passage_units = options.min_passage_units;
  detect.check.revision_share = options.heavy_revisions ? kHeavyRevisionShare : 0;
  detect.check.max_results = 0;
  detect.max_candidates = 0;  // every candidate is verified: all pairs, not the best 200
  absl::Status failure;

  RunOrdered<Prepared>(
      paths.size(), threads, 2 * static_cast<size_t>(threads),
      [&]() -> std::function<Prepared(size_t)> {
        return [&](size_t i) { return Prepare(paths[i], options, detect.check, fingerprinter); };
      },
      [&](Prepared& p) {
        const size_t b = out.documents.size();
        out.documents.push_back(p.doc);
        units.emplace_back();
        if (progress) progress(b + 1, p.doc.path);
        if (!p.doc.status.ok() || !failure.ok()) return;
        absl::StatusOr<Report> report = Detect(p.check, params, index, detect);
        if (!report.ok()) {
          failure = report.status();
          return;
        }
        for (const DocumentMatch& m : report->matches) {
          uint32_t longest = 0;
          for (const Span& s : m.spans) longest = std::max(longest, s.units);
          if (!m.revision_violation && (longest < options.min_passage_units || longest == 0)) {
            continue;
          }
          DocumentPair pair;
          pair.heavy_revision = m.revision_violation;
          pair.a = static_cast<size_t>(m.doc_id - 1);
          pair.b = b;
          pair.a_in_b = m.containment;  // the registered (earlier) document found in the test
          pair.b_in_a = m.ratio;
          const std::vector<UnitSpan>& a_units = units[pair.a];
          for (const Span& s : m.spans) {
            SharedPassage passage;
            passage.b_start = s.test_start;
            passage.b_end = s.test_end;
            passage.words = s.units;
            const uint32_t ue =
                std::min<uint32_t>(s.registered_unit_end, static_cast<uint32_t>(a_units.size()));
            if (s.registered_unit_begin < ue) {
              passage.a_start = a_units[s.registered_unit_begin].start;
              passage.a_end = a_units[ue - 1].end;
            }
            pair.passages.push_back(passage);
          }
          out.pairs.push_back(std::move(pair));
        }
        index.Register(b + 1, p.register_);
        units[b] = std::move(p.check.units);
      });
  if (!failure.ok()) return failure;

  std::sort(out.pairs.begin(), out.pairs.end(), [](const DocumentPair& x, const DocumentPair& y) {
    if (x.Shared() != y.Shared()) return x.Shared() > y.Shared();
    const double xs = std::min(x.a_in_b, x.b_in_a), ys = std::min(y.a_in_b, y.b_in_a);
    if (xs != ys) return xs > ys;
    return std::make_pair(x.a, x.b) < std::make_pair(y.a, y.b);
  });
  out.clusters = Clusters(out.documents.size(), out.pairs);
  return out;
}

std::string CompareJson(const Comparison& c, const std::vector<std::string>& corpus_lines,
                        const std::vector<std::string>* registered_lines) {
  json documents = json::array();
  for (const ComparedDocument& d : c.documents) {
    if (!d.status.ok()) {
      documents.push_back({{"path", d.path}, {"error", StatusText(d.status)}});
    } else {
      documents.push_back({{"path", d.path},
                           {"format", d.format},
                           {"words", d.words},
                           {"text_bytes", d.text_bytes}});
    }
  }
  json pairs = json::array();
  for (const DocumentPair& p : c.pairs) {
    json passages = json::array();
    for (const SharedPassage& s : p.passages) {
      passages.push_back({{"a_start", s.a_start},
                          {"a_end", s.a_end},
                          {"b_start", s.b_start},
                          {"b_end", s.b_end}});
    }
    pairs.push_back({{"a", c.documents[p.a].path},
                     {"b", c.documents[p.b].path},
                     {"a_in_b", p.a_in_b},
                     {"b_in_a", p.b_in_a},
                     {"heavy_revision", p.heavy_revision},
                     {"passages", std::move(passages)}});
  }
  json clusters = json::array();
  for (const std::vector<size_t>& cluster : c.clusters) {
    json paths = json::array();
    for (size_t i : cluster) paths.push_back(c.documents[i].path);
    clusters.push_back(std::move(paths));
  }
  json corpus = json::array();
  for (const std::string& line : corpus_lines) corpus.push_back(json::parse(line));
  json j = {{"documents", std::move(documents)},
            {"pairs", std::move(pairs)},
            {"clusters", std::move(clusters)},
            {"corpus", std::move(corpus)},
            {"params",
             {{"chunking", c.chunking},
              {"chunking_from", c.chunking_from},
              {"verify_k", c.verify_k},
              {"min_passage_units", c.min_passage_units},
              {"heavy_revisions", c.heavy_revisions}}}};
  if (registered_lines != nullptr) {
    json registered = json::array();
    for (const std::string& line : *registered_lines) registered.push_back(json::parse(line));
    j["registered"] = std::move(registered);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string CompareText(const Comparison& c) {
  std::string out;
  size_t failed = 0;
  for (const ComparedDocument& d : c.documents) {
    if (!d.status.ok()) {
      ++failed;
      out += "ERROR      " + d.path + ": " + StatusText(d.status) + "\n";
    }
  }
  out += "a_in_b  b_in_a  passages  a  <->  b\n";
  for (const DocumentPair& p : c.pairs) {
    char figures[64];
    std::snprintf(figures, sizeof(figures), "%6.3f  %6.3f  %8zu  ", p.a_in_b, p.b_in_a,
                  p.passages.size());
    out += figures + c.documents[p.a].path + "  <->  " + c.documents[p.b].path +
           (p.heavy_revision ? "  (heavy revision)" : "") + "\n";
  }
  for (size_t k = 0; k < c.clusters.size(); ++k) {
    out += "cluster " + std::to_string(k + 1) + ":";
    for (size_t i : c.clusters[k]) out += " " + c.documents[i].path;
    out += "\n";
  }
  out += std::to_string(c.documents.size()) + " document(s), " + std::to_string(failed) +
         " failed: " + std::to_string(c.pairs.size()) + " pair(s) share a passage of " +
         std::to_string(c.min_passage_units) + " words or more" +
         (c.heavy_revisions ? " or are heavy revisions" : "") + ", " +
         std::to_string(c.clusters.size()) + " cluster(s); chunking: " +
         (c.chunking_from == "server" ? "the server's" : "the defaults") + "\n";
  return out;
}

}  // namespace cops
