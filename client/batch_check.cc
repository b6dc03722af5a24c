#include "client/batch_check.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "client/check_stream.h"
#include "client/ordered_work.h"
#include "core/status_macros.h"

namespace cops {

namespace fs = std::filesystem;

std::vector<std::string> ExpandPaths(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& p : args) {
    std::error_code ec;
    if (p != "-" && fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        std::error_code type_ec;
        if (it->is_regular_file(type_ec)) found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
  return files;
}

absl::StatusOr<std::string> ReadDocument(const std::string& path, size_t max_bytes) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return absl::InvalidArgumentError(path + " is a directory");
    file.open(path, std::ios::binary);
    if (!file) return absl::NotFoundError("cannot read " + path);
    in = &file;
  }
  std::string content;
  // A regular file's size is known: one read. Otherwise blocks, up to one byte past the limit.
  std::error_code ec;
  const uintmax_t size = path == "-" ? 0 : fs::file_size(path, ec);
  constexpr size_t kBlock = 1 << 20;
  const size_t first = !ec && size > 0 ? std::min<uintmax_t>(size, max_bytes + 1) : kBlock;
  while (content.size() <= max_bytes) {
    const size_t at = content.size();
    if (at > 0 && in->peek() == std::char_traits<char>::eof()) break;
    content.resize(at + std::min(at == 0 ? first : kBlock, max_bytes + 1 - at));
    in->read(content.data() + at, static_cast<std::streamsize>(content.size() - at));
    content.resize(at + static_cast<size_t>(in->gcount()));
    if (!*in) break;
  }
  if (in->bad()) return absl::DataLossError("read error in " + path);
  if (content.size() > max_bytes) {
    return absl::ResourceExhaustedError(path + " is larger than " + std::to_string(max_bytes) +
                                        " bytes, the most cops reads of a file");
  }
  return content;
}

namespace {

// One document over `stream`: its reply, or its error (the read's, the call's, or the
// server's for this document) as a status.
absl::StatusOr<v1::CheckDocumentReply> CheckOne(CheckStream* stream, Client* client,
                                                v1::CheckDocumentRequest request) {
  std::vector<v1::CheckDocumentRequest> batch;
  batch.push_back(std::move(request));
  COPS_ASSIGN_OR_RETURN(std::vector<v1::CheckDocumentReply> replies,
                        stream->Check(std::move(batch), client->timeout()));
  if (replies.size() != 1) return absl::InternalError("CheckStream answered no reply");
  if (replies[0].error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(replies[0].error_code()),
                        replies[0].error_message());
  }
  return std::move(replies[0]);
}

}  // namespace

BatchCheckSummary CheckBatch(Client* client, const std::vector<std::string>& paths,
                             const BatchCheckOptions& options,
                             const std::function<void(BatchCheckResult&)>& on_result) {
  const int streams = std::max(options.streams, 1);
  BatchCheckSummary summary;
  RunOrdered<BatchCheckResult>(
      paths.size(), streams, std::max(options.window, static_cast<size_t>(streams)),
      [&]() -> std::function<BatchCheckResult(size_t)> {
        // Each thread owns one CheckStream call for all its documents.
        auto stream = std::make_shared<CheckStream>(client);
        return [&, stream](size_t i) {
          BatchCheckResult result;
          result.index = i;
          result.path = paths[i];
          absl::StatusOr<std::string> content = ReadDocument(paths[i]);
          if (!content.ok()) {
            result.reply = content.status();
            return result;
          }
          v1::CheckDocumentRequest request = options.request;
          request.set_content(*content);
          result.reply = CheckOne(stream.get(), client, std::move(request));
          result.content = *std::move(content);
          return result;
        };
      },
      [&](BatchCheckResult& result) {
        ++summary.documents;
        if (!result.reply.ok()) {
          ++summary.failed;
        } else if (result.reply->violation()) {
          ++summary.violations;
        }
        on_result(result);
      });
  return summary;
}

// ---- ProgressLine ----

void ProgressLine::Update(size_t done, size_t total, const BatchCheckSummary& so_far,
                          const std::string& path) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && done != total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  shown_ = true;
  std::cerr << "\r[" << done << "/" << total << "] " << so_far.violations << " violation"
            << (so_far.violations == 1 ? "" : "s") << ", " << so_far.failed << " failed  "
            << path << "\033[K" << std::flush;
}

void ProgressLine::Clear() {
  if (shown_) std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace cops
