// libFuzzer entry for cops-milter's message path (milter/message_check.h), in process: any
// bytes as a message through ExtractMessageTexts, the check requests, and a verdict from
// synthetic replies, with the headers the milter would add. Besides crashes and sanitizer
// reports, a header that a hostile attachment name could split into a new header line, or
// texts beyond max_parts, are bugs.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "milter/message_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cops::MilterPolicy policy;
  policy.max_message_bytes = 1 << 20;
  policy.max_parts = 1 + size % 8;
  std::string_view message(reinterpret_cast<const char*>(data), size);
  // The milter's PDF, DOCX and ODT attachments go to its worker pool; here they are parsed
  // in process too, so that the whole message path is fuzzed.
  const cops::SandboxConverter in_process =
      [](std::string_view input, cops::DocumentFormat format, const cops::ConvertLimits& limits,
         const cops::ConvertOptions& options) {
        return cops::ConvertInProcess(input, format, limits, options);
      };
  auto texts = cops::ExtractMessageTexts(message, policy, std::chrono::seconds(5), in_process);
  if (!texts.ok()) return 0;
  if (texts->size() > policy.max_parts) std::abort();
  const std::vector<cops::v1::CheckDocumentRequest> requests =
      cops::MakeCheckRequests(*texts, policy.Defaults());
  if (requests.size() != texts->size()) std::abort();
  // Every text "violates" a document in a collection named after the text's part, so that
  // attachment names reach X-COPS-Matches.
  std::vector<cops::v1::CheckDocumentReply> replies(texts->size());
  for (size_t i = 0; i < texts->size(); ++i) {
    if ((*texts)[i].text.find_first_not_of(" \t\r\n") == std::string::npos) std::abort();
    cops::v1::Match* m = replies[i].add_matches();
    m->set_doc_id(i % 3);
    m->set_ratio(static_cast<double>((*texts)[i].text.size() % 101) / 100.0);
    m->set_collection((*texts)[i].name);
    m->set_violation(true);
  }
  const cops::MessageVerdict verdict = cops::DecideVerdict(*texts, replies, policy, {policy.Defaults()});
  const std::string result = verdict.ResultHeader();
  if (!result.starts_with("violation") && !result.starts_with("clean")) std::abort();
  const std::string matches = verdict.MatchesHeader(10);
  for (size_t i = 0; i < matches.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(matches[i]);
    if (c == '\r') std::abort();
    // Lines are folded only as "\n\t" between documents.
    if (c == '\n' && (i + 1 >= matches.size() || matches[i + 1] != '\t')) std::abort();
  }
  return 0;
}
