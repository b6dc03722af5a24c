#include "protocol/check_reply.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "convert/converter.h"
#include "core/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "protocol/documents.h"

namespace cops {
namespace {

// The passage [start, end) of the extracted text, at most kMaxPassageBytes, cut before a
// UTF-8 continuation byte so the proto string stays valid UTF-8.
constexpr size_t kMaxPassageBytes = 2048;
std::string_view PassageText(std::string_view text, uint32_t start, uint32_t end) {
  if (start >= text.size() || end <= start) return {};
  size_t stop = std::min<size_t>({end, text.size(), size_t{start} + kMaxPassageBytes});
  auto continuation = [&](size_t i) {
    return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  while (stop > start && stop < text.size() && continuation(stop)) --stop;
  return text.substr(start, stop - start);
}

}  // namespace

absl::StatusOr<CheckOptions> CheckOptionsFromProto(const v1::CheckOptions& in,
                                                   bool heavy_revisions) {
  CheckOptions o;
  if (in.function() != v1::DECISION_FUNCTION_UNSPECIFIED) {
    const int f = static_cast<int>(in.function());
    if (!IsDecisionFunction(f)) {
      return absl::InvalidArgumentError("unknown decision function " + std::to_string(f));
    }
    o.function = static_cast<DecisionFunction>(f);
  }
  if (in.has_threshold()) {
    // NaN and out-of-range values are refused here with the bound in the message.
    if (!(in.threshold() > 0 && in.threshold() <= 1)) {
      return absl::InvalidArgumentError("threshold " + std::to_string(in.threshold()) +
                                        " is out of range: it must be in (0, 1]");
    }
    o.threshold = in.threshold();
  }
  if (in.has_min_count()) o.min_count = in.min_count();
  o.max_results = in.has_max_results() ? in.max_results() : kDefaultMaxResults;
  o.want_spans = in.has_want_spans() ? in.want_spans() : true;
  o.max_doc_frequency = in.max_doc_frequency();
  if (in.has_min_passage_units()) o.min_passage_units = in.min_passage_units();
  o.min_match_units = in.min_match_units();
  if (in.has_min_violation_units()) o.min_violation_units = in.min_violation_units();
  if (in.has_heavy_revisions() ? in.heavy_revisions() : heavy_revisions) {
    o.revision_share = kHeavyRevisionShare;
  }
  COPS_RETURN_IF_ERROR(o.Validate());
  return o;
}

absl::StatusOr<CheckRequestInfo> CheckRequestFromProto(const v1::CheckDocumentRequest& request,
                                                       bool heavy_revisions) {
  CheckRequestInfo info;
  info.content = request.content();
  COPS_ASSIGN_OR_RETURN(info.format, FormatFromProto(request.format()));
  COPS_ASSIGN_OR_RETURN(info.options, CheckOptionsFromProto(request.options(), heavy_revisions));
  info.sample_size = request.options().sample_size();
  info.sample_seed = request.options().sample_seed();
  info.exclusions.quotes = request.options().exclude_quotes();
  info.exclusions.references = request.options().exclude_references();
  return info;
}

void FillCheckReply(const CheckResult& result, const CheckRequestInfo& info,
                    const v1::CheckOptions& asked, const ChunkingParams& params,
                    v1::CheckDocumentReply* reply) {
  const CheckOptions& options = info.options;
  const Report& report = result.report;
  reply->set_violation(report.violation);
  reply->set_total_chunks(report.total_chunks);
  reply->set_selected_chunks(report.selected_chunks);
  reply->set_considered_chunks(report.considered_chunks);
  reply->set_common_chunks_ignored(report.common_chunks_ignored);
  reply->set_sampled(report.sampled);
  reply->set_sampling_error(report.sampling_error);
  reply->set_format(std::string(DocumentFormatName(result.format)));
  reply->set_charset(result.charset);
  const bool in_text = SpansIndexExtractedText(result.format);
  reply->set_offsets_in_extracted_text(in_text);
  reply->set_verified(report.verified);
  reply->set_stem_pairs(report.stem_pairs);
  reply->set_stem_pairs_checked(report.stem_pairs_checked);
  for (size_t i = 0; i < report.matches.size(); ++i) {
    const DocumentMatch& m = report.matches[i];
    const DocumentRecord& r = result.records[i];
    v1::Match* out = reply->add_matches();
    out->set_doc_id(m.doc_id);
    out->set_title(r.title);
    out->set_owner(r.owner);
    out->set_collection(r.collection);
    out->set_ratio(m.ratio);
    out->set_containment(m.containment);
    out->set_matched_chunks(m.matched_chunks);
    out->set_ordered_matches(m.ordered_matches);
    out->set_stored_chunks(m.stored_chunks);
    out->set_violation(m.violation);
    out->set_from_template(m.template_source);
    out->set_stem_pairs_shared(m.stem_pairs_shared);
    out->set_stem_pair_share(m.stem_pair_share);
    out->set_chunk_violation(m.chunk_violation);
    out->set_stem_pair_violation(m.stem_pair_violation);
    out->set_revision_violation(m.revision_violation);
    out->set_revision_grams(m.revision_grams);
    for (const Span& s : m.spans) {
      v1::Span* span = out->add_spans();
      span->set_test_start(s.test_start);
      span->set_test_end(s.test_end);
      span->set_has_registered(s.has_registered);
      if (s.has_registered) {
        span->set_registered_start(s.registered_start);
        span->set_registered_end(s.registered_end);
      }
      span->set_chunks(s.chunks);
      span->set_units(s.units);
      span->set_test_first_page(s.test_first_page);
      span->set_test_last_page(s.test_last_page);
      span->set_excluded(static_cast<v1::Exclusion>(s.excluded));
      span->set_revision_run(s.revision_run);
      if (in_text) {
        const std::string_view passage = PassageText(result.extracted_text, s.test_start, s.test_end);
        span->set_test_text(passage.data(), passage.size());
      }
    }
  }
  for (const ExcludedRange& r : report.excluded) {
    v1::ExcludedPassage* out = reply->add_excluded();
    out->set_test_start(r.start);
    out->set_test_end(r.end);
    out->set_reason(static_cast<v1::Exclusion>(r.reason));
  }
  for (const Manipulation& m : result.manipulations) {
    v1::Manipulation* out = reply->add_manipulations();
    out->set_kind(static_cast<v1::ManipulationKind>(m.kind));
    out->set_count(m.count);
    for (const TextRange& r : m.ranges) {
      v1::ExcludedPassage* range = out->add_ranges();
      range->set_test_start(r.start);
      range->set_test_end(r.end);
    }
  }
  v1::CheckParams* p = reply->mutable_params();
  p->set_chunking(params.Describe());
  p->set_function(std::string(DecisionFunctionName(options.function)));
  p->set_threshold(options.threshold);
  p->set_min_count(options.min_count);
  p->set_max_results(options.max_results);
  p->set_max_doc_frequency(options.max_doc_frequency);
  p->set_min_passage_units(options.min_passage_units);
  p->set_sample_size(asked.sample_size());
  p->set_sample_seed(asked.sample_seed());
  p->set_verify_k(params.verify_k);
  p->set_want_spans(options.want_spans);
  p->set_exclude_quotes(info.exclusions.quotes);
  p->set_exclude_references(info.exclusions.references);
  p->set_min_match_units(options.min_match_units);
  p->set_min_violation_units(options.min_violation_units);
  p->set_heavy_revisions(options.revision_share > 0);
  for (const std::string& c : info.template_collections) p->add_template_collections(c);
}
const std::map<std::string, ReplyFieldMerge>& CheckReplyFieldMerges() {
  using M = ReplyFieldMerge;
  static const auto* const rules = new std::map<std::string, ReplyFieldMerge>{
      {"request_id", M::kSetByRouter},
      {"violation", M::kAny},  // also when a partition's max_results cut the match off
      {"total_chunks", M::kFromFirst},
      {"selected_chunks", M::kFromFirst},
      // Each partition ignores the chunks common in its own documents; the first's stand
      // for all (docs/scale-out.md, "Where one router differs from one node").
      {"considered_chunks", M::kFromFirst},
      {"common_chunks_ignored", M::kFromFirst},
      {"sampled", M::kFromFirst},  // the same sample (size, seed) on every partition
      // The error of the best match's sampled decision, which may be any partition's.
      {"sampling_error", M::kMax},
      {"matches", M::kMatches},
      {"params", M::kFromFirst},
      {"format", M::kFromFirst},
      {"charset", M::kFromFirst},
      {"error_code", M::kSetByRouter},
      {"error_message", M::kSetByRouter},
      {"offsets_in_extracted_text", M::kFromFirst},
      {"verified", M::kAll},
      {"excluded", M::kExcluded},
      {"partial", M::kSetByRouter},
      {"missing_partitions", M::kSetByRouter},
      {"manipulations", M::kFromFirst},  // found in the test document, by every partition
      {"stem_pairs", M::kFromFirst},       // the test document's, the same on every partition
      // Every partition's documents were compared, or the evidence is incomplete.
      {"stem_pairs_checked", M::kAll},
  };
  return *rules;
}

void FillCheckError(const absl::Status& status, const std::string& request_id,
                    v1::CheckDocumentReply* reply) {
  reply->Clear();
  reply->set_request_id(request_id);
  reply->set_error_code(static_cast<int32_t>(status.code()));
  reply->set_error_message(std::string(status.message()));
}

v1::CheckDocumentReply MergeCheckReplies(
    const std::vector<std::optional<v1::CheckDocumentReply>>& replies, uint32_t max_results) {
  const google::protobuf::Descriptor* descriptor = v1::CheckDocumentReply::descriptor();
  const google::protobuf::Reflection* reflection = v1::CheckDocumentReply::GetReflection();
  const std::map<std::string, ReplyFieldMerge>& rules = CheckReplyFieldMerges();
  v1::CheckDocumentReply merged;
  bool first = true;
  std::vector<v1::Match> matches;
  std::set<std::tuple<uint32_t, uint32_t, int>> excluded;
  std::vector<uint32_t> missing;
  for (uint32_t p = 0; p < replies.size(); ++p) {
    if (!replies[p].has_value()) {
      missing.push_back(p);
      continue;
    }
    const v1::CheckDocumentReply& reply = *replies[p];
    if (first) {
      // The fields taken from the first reply; every other one starts empty (and one
      // without a rule stays so).
      merged = reply;
      for (int i = 0; i < descriptor->field_count(); ++i) {
        const auto rule = rules.find(descriptor->field(i)->name());
        if (rule == rules.end() || rule->second != ReplyFieldMerge::kFromFirst) {
          reflection->ClearField(&merged, descriptor->field(i));
        }
      }
    }
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* field = descriptor->field(i);
      const auto rule = rules.find(field->name());
      if (rule == rules.end()) continue;  // no rule: left out
      using Type = google::protobuf::FieldDescriptor::CppType;
      switch (rule->second) {
        case ReplyFieldMerge::kFromFirst:  // copied with the first reply
          break;
        case ReplyFieldMerge::kAny:
          reflection->SetBool(&merged, field,
                              (!first && reflection->GetBool(merged, field)) ||
                                  reflection->GetBool(reply, field));
          break;
        case ReplyFieldMerge::kAll:
          reflection->SetBool(&merged, field,
                              (first || reflection->GetBool(merged, field)) &&
                                  reflection->GetBool(reply, field));
          break;
        case ReplyFieldMerge::kMax:
          if (field->cpp_type() == Type::CPPTYPE_DOUBLE) {
            const double v = reflection->GetDouble(reply, field);
            if (first || v > reflection->GetDouble(merged, field)) {
              reflection->SetDouble(&merged, field, v);
            }
          } else if (field->cpp_type() == Type::CPPTYPE_UINT32) {
            const uint32_t v = reflection->GetUInt32(reply, field);
            if (first || v > reflection->GetUInt32(merged, field)) {
              reflection->SetUInt32(&merged, field, v);
            }
          }
          break;
        case ReplyFieldMerge::kMatches:
          for (const v1::Match& m : reply.matches()) matches.push_back(m);
          break;
        case ReplyFieldMerge::kExcluded:
          for (const v1::ExcludedPassage& e : reply.excluded()) {
            excluded.emplace(e.test_start(), e.test_end(), static_cast<int>(e.reason()));
          }
          break;
        case ReplyFieldMerge::kSetByRouter:
          break;
      }
    }
    first = false;
  }
  // As core/detect.cc orders: templates after the sources that count, then ratio
  // descending, then stem-pair share descending, then id.
  std::sort(matches.begin(), matches.end(), [](const v1::Match& a, const v1::Match& b) {
    if (a.from_template() != b.from_template()) return b.from_template();
    if (a.ratio() != b.ratio()) return a.ratio() > b.ratio();
    if (a.stem_pair_share() != b.stem_pair_share()) {
      return a.stem_pair_share() > b.stem_pair_share();
    }
    return a.doc_id() < b.doc_id();
  });
  if (max_results > 0 && matches.size() > max_results) {
    // A violation by stem pairs has a ratio near 0: kept before the cut, as one node keeps
    // it, so a merged "violation" names its documents.
    std::stable_partition(matches.begin(), matches.end(),
                          [](const v1::Match& m) { return m.violation(); });
    matches.resize(max_results);
  }
  for (v1::Match& m : matches) *merged.add_matches() = std::move(m);
  for (const auto& [start, end, reason] : excluded) {
    v1::ExcludedPassage* e = merged.add_excluded();
    e->set_test_start(start);
    e->set_test_end(end);
    e->set_reason(static_cast<v1::Exclusion>(reason));
  }
  for (uint32_t p : missing) merged.add_missing_partitions(p);
  merged.set_partial(!missing.empty());
  return merged;
}


}  // namespace cops
