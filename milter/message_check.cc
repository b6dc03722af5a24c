#include "milter/message_check.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>

#include "absl/strings/str_cat.h"

namespace cops {
namespace {

bool Blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

std::string Ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", r);
  return buf;
}

absl::Status FromReply(const v1::CheckDocumentReply& reply) {
  if (reply.error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(reply.error_code()),
                        reply.error_message());
  }
  if (!reply.partial()) return absl::OkStatus();
  // A router answered from some partitions only: a match found stands, "none" does not.
  std::string missing;
  for (uint32_t p : reply.missing_partitions()) {
    absl::StrAppend(&missing, missing.empty() ? "" : ", ", p);
  }
  if (missing.empty()) return absl::UnavailableError("some partitions did not answer");
  return absl::UnavailableError(absl::StrCat(
      reply.missing_partitions_size() == 1 ? "partition " : "partitions ", missing,
      " did not answer"));
}

}  // namespace

absl::StatusOr<std::vector<MessageText>> ExtractMessageTexts(std::string_view message,
                                                             const MilterPolicy& policy,
                                                             std::chrono::milliseconds budget,
                                                             const SandboxConverter& sandbox,
                                                             uint32_t* left_out) {
  if (left_out != nullptr) *left_out = 0;
  if (message.size() > policy.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("message of ", message.size(),
                                                     " bytes exceeds max_message_bytes ",
                                                     policy.max_message_bytes));
  }
  ConvertLimits limits;
  limits.max_input_bytes = policy.max_message_bytes;
  limits.time_budget_ms = static_cast<uint32_t>(std::max<int64_t>(1, budget.count()));
  absl::StatusOr<ConvertedDocument> doc = ConvertEmailInProcess(message, limits, {}, sandbox);
  std::vector<MessageText> texts;
  if (!doc.ok()) {
    if (doc.status().code() != absl::StatusCode::kInvalidArgument) return doc.status();
    if (!Blank(message)) texts.push_back({"raw", std::string(message)});
    return texts;
  }
  // The message's own text is everything outside the attachments (subject, body parts).
  MessageText own{"message", ""};
  std::vector<MessageText> attachments;
  size_t pos = 0;
  for (const ConvertedPart& part : doc->parts) {
    if (part.name == "body" || part.text_start < pos || part.text_end < part.text_start) continue;
    own.text.append(doc->text, pos, part.text_start - pos);
    attachments.push_back(
        {part.name, doc->text.substr(part.text_start, part.text_end - part.text_start)});
    pos = part.text_end;
  }
  if (pos < doc->text.size()) own.text.append(doc->text, pos);
  if (!Blank(own.text)) texts.push_back(std::move(own));
  for (MessageText& a : attachments) {
    if (Blank(a.text)) continue;
    if (texts.size() < policy.max_parts) {
      texts.push_back(std::move(a));
    } else if (left_out != nullptr) {
      ++*left_out;
    }
  }
  return texts;
}

std::vector<v1::CheckDocumentRequest> MakeCheckRequests(const std::vector<MessageText>& texts,
                                                        const CheckRules& rules) {
  std::vector<v1::CheckDocumentRequest> requests(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    v1::CheckDocumentRequest& r = requests[i];
    r.set_content(texts[i].text);
    r.set_format(v1::DOCUMENT_FORMAT_TEXT);
    r.mutable_options()->set_want_spans(false);
    if (rules.threshold.has_value()) r.mutable_options()->set_threshold(*rules.threshold);
    for (const std::string& c : rules.collections) r.add_collections(c);
  }
  return requests;
}

MessageVerdict DecideVerdict(const std::vector<MessageText>& texts,
                             const std::vector<v1::CheckDocumentReply>& replies,
                             const MilterPolicy& policy, const std::vector<CheckRules>& rules) {
  MessageVerdict verdict;
  verdict.parts = static_cast<uint32_t>(texts.size());
  for (const CheckRules& r : rules) {
    if (!r.domain.empty()) verdict.domains.push_back(r.domain);
  }
  std::map<uint64_t, ViolatedDocument> found;
  MilterAction action = MilterAction::kHeaders;
  absl::Status first_error;
  for (size_t k = 0; k < replies.size() && k < texts.size() * rules.size(); ++k) {
    const MessageText& text = texts[k % texts.size()];
    const CheckRules& under = rules[k / texts.size()];
    if (absl::Status s = FromReply(replies[k]); !s.ok()) {
      if (first_error.ok()) {
        first_error = absl::Status(s.code(), absl::StrCat(text.name, ": ", s.message()));
      }
      if (!replies[k].partial() || replies[k].error_code() != 0) continue;
    }
    for (const v1::Match& m : replies[k].matches()) {
      if (!m.violation()) continue;
      action = std::max(action, policy.ActionFor(under, m.collection()));
      ViolatedDocument& d = found[m.doc_id()];
      if (d.part.empty() || m.ratio() > d.ratio) {
        d = {m.doc_id(), m.ratio(), m.collection(), text.name};
      }
    }
  }
  if (replies.size() != texts.size() * rules.size() && first_error.ok()) {
    first_error = absl::InternalError(absl::StrCat(replies.size(), " replies for ",
                                                   texts.size() * rules.size(), " requests"));
  }
  if (found.empty()) {
    if (!first_error.ok()) {
      verdict.outcome = MessageVerdict::Outcome::kUnchecked;
      verdict.error = first_error;
    }
    return verdict;
  }
  verdict.outcome = MessageVerdict::Outcome::kViolation;
  verdict.action = action;
  for (auto& [id, d] : found) verdict.violations.push_back(std::move(d));
  std::stable_sort(
      verdict.violations.begin(), verdict.violations.end(),
      [](const ViolatedDocument& a, const ViolatedDocument& b) { return a.ratio > b.ratio; });
  return verdict;
}

std::string MessageVerdict::ResultHeader() const {
  if (outcome == Outcome::kUnchecked) {
    // One header line: the reason may quote a file name or a server's message.
    std::string why(error.message());
    for (char& c : why) {
      if (c == '\r' || c == '\n' || c == '\t') c = ' ';
    }
    return absl::StrCat("unchecked (", why.empty() ? "unknown reason" : why, ")");
  }
  if (outcome != Outcome::kViolation) return "clean";
  return absl::StrCat("violation (", violations.size(),
                      violations.size() == 1 ? " document" : " documents", ", best ratio ",
                      Ratio(violations.front().ratio), ")");
}

std::string MessageVerdict::MatchesHeader(uint32_t max) const {
  std::string out;
  for (size_t i = 0; i < violations.size() && i < max; ++i) {
    const ViolatedDocument& d = violations[i];
    if (i > 0) out += ";\n\t";
    // Collection and part names come from registrations and attachments: keep the header
    // one token each and free of line breaks.
    auto token = [](std::string s) {
      for (char& c : s) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u <= ' ' || u == 0x7f || c == ';') c = '_';
      }
      return s.empty() ? std::string("\"\"") : s;
    };
    absl::StrAppend(&out, "doc=", d.doc_id, " ratio=", Ratio(d.ratio),
                    " collection=", token(d.collection), " part=", token(d.part));
  }
  return out;
}

MessageVerdict CheckMessage(std::string_view message, const MilterPolicy& policy,
                            const std::vector<std::string>& recipients,
                            const SandboxConverter& sandbox, PartChecker* checker) {
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::milliseconds timeout(policy.timeout_ms);
  MessageVerdict unchecked;
  unchecked.outcome = MessageVerdict::Outcome::kUnchecked;
  uint32_t left_out = 0;
  absl::StatusOr<std::vector<MessageText>> texts =
      ExtractMessageTexts(message, policy, timeout, sandbox, &left_out);
  if (!texts.ok()) {
    unchecked.error = texts.status();
    return unchecked;
  }
  if (texts->empty()) return MessageVerdict();  // nothing to compare: clean
  const std::vector<CheckRules> rules = policy.RulesFor(recipients);
  std::vector<v1::CheckDocumentRequest> requests;
  for (const CheckRules& r : rules) {
    std::vector<v1::CheckDocumentRequest> more = MakeCheckRequests(*texts, r);
    requests.insert(requests.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  const std::chrono::milliseconds left = std::max(timeout - spent, std::chrono::milliseconds(1));
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> replies =
      checker->Check(std::move(requests), left);
  if (!replies.ok()) {
    unchecked.error = replies.status();
    unchecked.parts = static_cast<uint32_t>(texts->size());
    return unchecked;
  }
  MessageVerdict verdict = DecideVerdict(*texts, *replies, policy, rules);
  if (left_out > 0 && verdict.outcome == MessageVerdict::Outcome::kClean) {
    verdict.outcome = MessageVerdict::Outcome::kUnchecked;
    verdict.error = absl::ResourceExhaustedError(
        absl::StrCat(texts->size() + left_out, " texts, only the first ", texts->size(),
                     " checked: max_parts"));
  }
  return verdict;
}

}  // namespace cops
