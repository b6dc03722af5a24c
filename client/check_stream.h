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
// Thread-safety: not thread-safe; one CheckStream per thread at a time (it owns a completion
// queue), e.g. lent by a CheckStreamPool.

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
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

// At most `size` CheckStreams, each lent to one batch at a time: for callers with more
// threads than should each hold a call open (cops-milter's SMTP connections). copsd lets one
// client connection open only so many streams (--max-streams-per-connection, 16 by default)
// and serves each open stream with one of its handler threads (--threads, 64): with a stream
// per thread, the threads past the 16th would wait for another's stream to close until their
// checks time out, and past ~60 open streams copsd refuses calls ("Server Threadpool
// Exhausted"). A stream is opened when a batch finds none idle and fewer than `size` open,
// and kept open for the next batch.
//
// Thread-safety: thread-safe.
class CheckStreamPool {
 public:
  // REQUIRES: `client` outlives the pool; size > 0.
  CheckStreamPool(Client* client, size_t size);
  // REQUIRES: no Check() in progress.
  ~CheckStreamPool();
  CheckStreamPool(const CheckStreamPool&) = delete;
  CheckStreamPool& operator=(const CheckStreamPool&) = delete;

  // CheckStream::Check on a stream of the pool. `timeout` covers the wait for a free stream
  // and the check: DEADLINE_EXCEEDED when all `size` streams stay busy until it passes.
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout);

 private:
  bool HasFreeStream() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !idle_.empty() || lent_ < size_;
  }

  Client* const client_;
  const size_t size_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<CheckStream>> idle_ ABSL_GUARDED_BY(mu_);
  size_t lent_ ABSL_GUARDED_BY(mu_) = 0;  // streams in use by a batch
};

}  // namespace cops

#endif  // COPS_CLIENT_CHECK_STREAM_H_
