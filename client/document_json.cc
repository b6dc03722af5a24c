#include "client/document_json.h"

#include "core/time_format.h"
#include "nlohmann/json.hpp"

namespace cops {

std::string DocumentInfoJson(const v1::DocumentInfo& d) {
  const nlohmann::json j = {{"doc_id", d.doc_id()},
                            {"title", d.metadata().title()},
                            {"author", d.metadata().author()},
                            {"owner", d.metadata().owner()},
                            {"collection", d.metadata().collection()},
                            {"external_id", d.metadata().external_id()},
                            {"format", d.format()},
                            {"registered_unix_micros", d.registered_unix_micros()},
                            {"sha256", d.sha256()},
                            {"chunks", d.chunks()},
                            {"stored_chunks", d.stored_chunks()},
                            {"size_bytes", d.size_bytes()},
                            {"expires_unix_micros", d.metadata().expires_unix_micros()},
                            {"not_before_unix_micros", d.metadata().not_before_unix_micros()}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string MatchesJson(const v1::ListMatchesReply& reply) {
  nlohmann::json entries = nlohmann::json::array();
  for (const v1::AuditEntry& e : reply.entries()) {
    entries.push_back({{"time", FormatTimeMicros(e.unix_micros())},
                       {"unix_micros", e.unix_micros()},
                       {"doc_id", e.doc_id()},
                       {"collection", e.collection()},
                       {"checker", e.checker()},
                       {"ratio", e.ratio()},
                       {"containment", e.containment()},
                       {"matched_chunks", e.matched_chunks()},
                       {"violation", e.violation()},
                       {"test_sha256", e.test_sha256()}});
  }
  return nlohmann::json{{"matches", std::move(entries)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cops
