#ifndef COPS_CLIENT_CHECK_STREAM_H_
#define COPS_CLIENT_CHECK_STREAM_H_

// One long-lived CheckStream call (proto/cops.proto) that checks batches of documents with a
// deadline per batch, for callers that check many messages over one connection (cops-milter
// keeps one per SMTP connection). Requests of a batch are written, then their replies read
// in order; a per-message error comes back inside its reply (error_code), not as a failure.
//
// The call is opened on first use and reopened after any failure, so a copsd restart costs
// the batch that was in flight when it went away, not the stream: Check() retries once on a
// fresh call when the old one turns out to be dead before any reply was read.
//
// Thread-safety: not thread-safe; one CheckStream per thread (it owns a completion queue).

#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/cops.pb.h"

namespace cops {

class Client;

class CheckStream {
 public:
  // REQUIRES: `client` outlives this stream.
  explicit CheckStream(Client* client);
  ~CheckStream();  // half-closes and finishes the call, or cancels it when broken
  CheckStream(const CheckStream&) = delete;
  CheckStream& operator=(const CheckStream&) = delete;

  // Checks `requests` (their request_id fields are overwritten with their index) and returns
  // one reply per request, in order. Errors: DEADLINE_EXCEEDED when `timeout` passes first
  // (the call is then cancelled and the next batch opens a new one); UNAVAILABLE and the
  // server's other call-level codes when the stream fails. An empty batch returns no replies
  // without contacting the server.
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout);

  // Whether a call is open (false before the first batch and after a failure).
  bool open() const { return call_ != nullptr; }

 private:
  struct Call;
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> CheckOnce(
      const std::vector<v1::CheckDocumentRequest>& requests,
      std::chrono::system_clock::time_point deadline, bool* replies_started);
  void Close(bool cancel);

  Client* const client_;
  std::unique_ptr<Call> call_;
};

}  // namespace cops

#endif  // COPS_CLIENT_CHECK_STREAM_H_
