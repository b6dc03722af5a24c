#include "client/batch_check.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "client/ordered_work.h"
#include "grpcpp/grpcpp.h"

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

absl::StatusOr<std::string> ReadDocument(const std::string& path) {
  std::stringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
    return buf.str();
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) return absl::InvalidArgumentError(path + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  buf << in.rdbuf();
  if (in.bad()) return absl::DataLossError("read error in " + path);
  return buf.str();
}

// ---- CheckSession ----

struct CheckSession::Call {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::CheckDocumentRequest, v1::CheckDocumentReply>>
      stream;
  std::chrono::steady_clock::time_point opened;
};

CheckSession::CheckSession(Client* client) : client_(client) {}
CheckSession::~CheckSession() { Close(); }

absl::Status CheckSession::Open() {
  call_ = std::make_unique<Call>();
  client_->Prepare(&call_->context);
  // Prepare() gave the call one timeout; the call lives for up to two, and is replaced once
  // one has passed, so every check still has a whole timeout ahead of it.
  call_->context.set_deadline(std::chrono::system_clock::now() + 2 * client_->timeout());
  call_->opened = std::chrono::steady_clock::now();
  call_->stream = client_->stub()->CheckStream(&call_->context);
  if (call_->stream == nullptr) {
    call_.reset();
    return absl::UnavailableError("cannot open a CheckStream call");
  }
  return absl::OkStatus();
}

void CheckSession::Close() {
  if (call_ == nullptr) return;
  call_->stream->WritesDone();
  v1::CheckDocumentReply rest;
  while (call_->stream->Read(&rest)) {
  }
  call_->stream->Finish().ok();  // the replies that mattered were read already
  call_.reset();
}

absl::StatusOr<v1::CheckDocumentReply> CheckSession::Check(
    const v1::CheckDocumentRequest& request) {
  if (call_ != nullptr && std::chrono::steady_clock::now() - call_->opened > client_->timeout()) {
    Close();
  }
  if (call_ == nullptr) {
    absl::Status s = Open();
    if (!s.ok()) return s;
  }
  v1::CheckDocumentReply reply;
  if (!call_->stream->Write(request) || !call_->stream->Read(&reply)) {
    // The call broke: its status says why; the next check opens a new one.
    call_->stream->WritesDone();
    absl::Status s = FromGrpc(call_->stream->Finish());
    call_.reset();
    return s.ok() ? absl::UnavailableError("the server ended the check stream") : s;
  }
  if (reply.error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(reply.error_code()),
                        reply.error_message());
  }
  return reply;
}

// ---- CheckBatch ----

BatchCheckSummary CheckBatch(Client* client, const std::vector<std::string>& paths,
                             const BatchCheckOptions& options,
                             const std::function<void(BatchCheckResult&)>& on_result) {
  const int streams = std::max(options.streams, 1);
  BatchCheckSummary summary;
  RunOrdered<BatchCheckResult>(
      paths.size(), streams, std::max(options.window, static_cast<size_t>(streams)),
      [&]() -> std::function<BatchCheckResult(size_t)> {
        // Each thread owns one CheckStream call for all its documents.
        auto session = std::make_shared<CheckSession>(client);
        return [&, session](size_t i) {
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
          request.set_request_id(std::to_string(i));
          result.reply = session->Check(request);
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
