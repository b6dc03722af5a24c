#include "client/document_json.h"

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

}  // namespace cops
