#include "client/batch_register.h"

#include <filesystem>
#include <utility>

#include "client/batch_check.h"
#include "convert/charset.h"
#include "nlohmann/json.hpp"

namespace cops {

void RegisterFiles(
    Client* client, const std::vector<std::string>& files, bool receipts,
    const std::function<v1::Document(const std::string& path, std::string content)>& make_document,
    const std::function<void(const std::string& path,
                             const absl::StatusOr<v1::RegisterDocumentReply>& reply)>& on_result,
    const std::function<void(size_t sent, const std::string& path)>& on_window) {
  if (files.size() == 1) {
    absl::StatusOr<std::string> content = ReadDocument(files[0]);
    if (!content.ok()) {
      on_result(files[0], content.status());
    } else {
      on_result(files[0], client->Register(make_document(files[0], *std::move(content)), receipts));
    }
    return;
  }
  for (size_t next = 0; next < files.size();) {
    const size_t first = next;
    std::vector<absl::StatusOr<v1::RegisterDocumentReply>> replies;
    std::vector<v1::Document> docs;
    std::vector<size_t> reply_of;  // replies index of docs[k]
    size_t bytes = 0;
    for (; next < files.size() && docs.size() < kRegisterWindowFiles &&
           bytes < kRegisterWindowBytes;
         ++next) {
      absl::StatusOr<std::string> content = ReadDocument(files[next]);
      if (!content.ok()) {
        replies.push_back(content.status());
        continue;
      }
      bytes += content->size();
      replies.push_back(absl::UnknownError("not sent"));
      reply_of.push_back(replies.size() - 1);
      docs.push_back(make_document(files[next], *std::move(content)));
    }
    if (on_window) on_window(next, files[next - 1]);
    if (!docs.empty()) {
      absl::StatusOr<v1::RegisterDocumentsReply> bulk = client->RegisterMany(docs, receipts);
      for (size_t k = 0; k < docs.size(); ++k) {
        absl::StatusOr<v1::RegisterDocumentReply>& reply = replies[reply_of[k]];
        if (!bulk.ok()) {
          reply = bulk.status();
        } else if (k >= static_cast<size_t>(bulk->results_size())) {
          reply = absl::UnavailableError("the server ended the stream early");
        } else {
          reply = ResultOf(bulk->results(static_cast<int>(k)));
        }
      }
    }
    for (size_t k = 0; k < replies.size(); ++k) on_result(files[first + k], replies[k]);
  }
}

std::string TitleOfPath(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  return IsValidUtf8(name) ? name : ToUtf8(name, "UTF-8");
}

std::string RegisterJsonLine(const std::string& path, const v1::RegisterDocumentReply& reply) {
  nlohmann::json j = {{"doc_id", reply.doc_id()},
                      {"path", path},
                      {"chunks", reply.chunks()},
                      {"stored_chunks", reply.stored_chunks()},
                      {"duplicate_of", nullptr},
                      {"created", reply.created()},
                      {"format", reply.format()},
                      {"charset", reply.charset()}};
  if (reply.has_duplicate_of()) j["duplicate_of"] = reply.duplicate_of();
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RegisterLine(const std::string& path, const v1::RegisterDocumentReply& reply) {
  const std::string id = std::to_string(reply.doc_id());
  if (reply.has_duplicate_of()) {
    return "duplicate   #" + id + "  " + path + "  (same text as #" +
           std::to_string(reply.duplicate_of()) + ")";
  }
  return (reply.created() ? "registered  #" : "exists      #") + id + "  " + path + "  (" +
         std::to_string(reply.chunks()) + " chunks, " + std::to_string(reply.stored_chunks()) +
         " stored)";
}

}  // namespace cops
