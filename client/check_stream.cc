#include "client/check_stream.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "client/client.h"
#include "grpcpp/grpcpp.h"

namespace cops {

// One CheckStream call driven through its own completion queue, so that every step waits
// with a deadline (the sync API's Read() cannot). At most one operation is outstanding at
// any time, so the event AsyncNext returns is always the one just started.
struct CheckStream::Call {
  grpc::ClientContext context;
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<v1::CheckDocumentRequest, v1::CheckDocumentReply>>
      rw;
  bool finished = false;
  // Where Finish() writes the call's status: it lives as long as the call, since a Finish()
  // that timed out completes only when the queue is drained (Close).
  grpc::Status final_status;
  // Where Read() puts a reply, for the same reason.
  v1::CheckDocumentReply reading;

  // OK when the outstanding operation succeeded; DEADLINE_EXCEEDED when `deadline` passed
  // first (the operation stays outstanding until the call is cancelled); UNAVAILABLE when
  // the call is dead (Finish() then tells why).
  absl::Status Wait(std::chrono::system_clock::time_point deadline) {
    void* tag = nullptr;
    bool ok = false;
    switch (cq.AsyncNext(&tag, &ok, deadline)) {
      case grpc::CompletionQueue::TIMEOUT:
        return absl::DeadlineExceededError("copsd did not answer in time");
      case grpc::CompletionQueue::SHUTDOWN:
        return absl::InternalError("check stream: completion queue shut down");
      case grpc::CompletionQueue::GOT_EVENT:
        break;
    }
    return ok ? absl::OkStatus() : absl::UnavailableError("check stream closed");
  }

  // The call's final status after a failed operation, e.g. UNAVAILABLE "failed to connect".
  absl::Status FinalStatus(std::chrono::system_clock::time_point deadline) {
    if (finished) return absl::UnavailableError("check stream closed");
    finished = true;
    rw->Finish(&final_status, this);
    if (absl::Status s = Wait(deadline); !s.ok()) return s;
    absl::Status result = FromGrpc(final_status);
    return result.ok() ? absl::UnavailableError("check stream ended early") : result;
  }
};

CheckStream::CheckStream(Client* client) : client_(client) {}

CheckStream::~CheckStream() { Close(/*cancel=*/false); }

void CheckStream::Close(bool cancel) {
  if (call_ == nullptr) return;
  Call& c = *call_;
  if (!cancel && !c.finished) {
    const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(1);
    c.rw->WritesDone(this);
    cancel = !c.Wait(deadline).ok();
    if (!cancel) {
      c.finished = true;
      c.rw->Finish(&c.final_status, this);
      cancel = !c.Wait(deadline).ok();
    }
  }
  if (cancel) {
    c.context.TryCancel();
    if (!c.finished) {
      c.finished = true;
      c.rw->Finish(&c.final_status, this);
    }
  }
  // Every outstanding operation completes once the call is over or cancelled.
  c.cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (c.cq.Next(&tag, &ok)) {
  }
  call_.reset();
}

absl::StatusOr<std::vector<v1::CheckDocumentReply>> CheckStream::CheckOnce(
    const std::vector<v1::CheckDocumentRequest>& requests,
    std::chrono::system_clock::time_point deadline, bool* replies_started) {
  if (call_ == nullptr) {
    call_ = std::make_unique<Call>();
    client_->Prepare(&call_->context);  // the API key
    // The call lives as long as the connection it serves; each batch has its own deadline.
    call_->context.set_deadline(std::chrono::system_clock::time_point::max());
    call_->rw = client_->stub()->PrepareAsyncCheckStream(&call_->context, &call_->cq);
    call_->rw->StartCall(this);
    if (absl::Status s = call_->Wait(deadline); !s.ok()) {
      return s.code() == absl::StatusCode::kUnavailable ? call_->FinalStatus(deadline) : s;
    }
  }
  Call& c = *call_;
  for (const v1::CheckDocumentRequest& request : requests) {
    c.rw->Write(request, this);
    if (absl::Status s = c.Wait(deadline); !s.ok()) {
      return s.code() == absl::StatusCode::kUnavailable ? c.FinalStatus(deadline) : s;
    }
  }
  std::vector<v1::CheckDocumentReply> replies(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    c.rw->Read(&c.reading, this);
    if (absl::Status s = c.Wait(deadline); !s.ok()) {
      return s.code() == absl::StatusCode::kUnavailable ? c.FinalStatus(deadline) : s;
    }
    replies[i] = std::move(c.reading);
    c.reading.Clear();
    *replies_started = true;
    if (replies[i].request_id() != requests[i].request_id()) {
      return absl::InternalError("check stream: reply " + replies[i].request_id() +
                                 " out of order (expected " + requests[i].request_id() + ")");
    }
  }
  return replies;
}

absl::StatusOr<std::vector<v1::CheckDocumentReply>> CheckStream::Check(
    std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) {
  if (requests.empty()) return std::vector<v1::CheckDocumentReply>();
  for (size_t i = 0; i < requests.size(); ++i) requests[i].set_request_id(std::to_string(i));
  const auto deadline = std::chrono::system_clock::now() + timeout;
  for (int attempt = 0;; ++attempt) {
    const bool reused = call_ != nullptr;
    bool replies_started = false;
    absl::StatusOr<std::vector<v1::CheckDocumentReply>> replies =
        CheckOnce(requests, deadline, &replies_started);
    if (replies.ok()) return replies;
    Close(/*cancel=*/true);
    // A call that died while idle (copsd restarted, or ended the stream for its idle
    // timeout or maximum age: CANCELLED) gets one fresh try within the deadline.
    const absl::StatusCode code = replies.status().code();
    const bool stale = reused && !replies_started &&
                       (code == absl::StatusCode::kUnavailable ||
                        code == absl::StatusCode::kCancelled);
    if (!stale || attempt > 0) return replies.status();
  }
}

CheckStreamPool::CheckStreamPool(Client* client, size_t size) : client_(client), size_(size) {
  assert(size > 0);
}

CheckStreamPool::~CheckStreamPool() = default;

absl::StatusOr<std::vector<v1::CheckDocumentReply>> CheckStreamPool::Check(
    std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<CheckStream> stream;
  {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(this, &CheckStreamPool::HasFreeStream),
                              absl::FromChrono(timeout))) {
      return absl::DeadlineExceededError("no check stream to copsd came free in time (all " +
                                         std::to_string(size_) + " busy)");
    }
    ++lent_;
    if (!idle_.empty()) {
      stream = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (stream == nullptr) stream = std::make_unique<CheckStream>(client_);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> replies =
      stream->Check(std::move(requests), std::max(timeout - waited, std::chrono::milliseconds(1)));
  absl::MutexLock lock(&mu_);
  --lent_;
  idle_.push_back(std::move(stream));  // a failed stream reopens its call on its next batch
  return replies;
}

}  // namespace cops
