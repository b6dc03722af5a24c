#include "server/unparsed_requests.h"

#include "grpcpp/support/status.h"

namespace cops {
namespace {

using grpc::experimental::InterceptionHookPoints;

constexpr char kUnparsed[] =
    "the request message does not parse: a string field (title, author, owner, collection, "
    "external id, ...) holds bytes that are not UTF-8, or the message is not the method's";

class UnparsedRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::INTERNAL && status.error_message().empty()) {
        methods->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, kUnparsed));
      }
    }
    methods->Proceed();
  }
};

class UnparsedRequestInterceptorFactoryImpl final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // Streaming calls: a message that does not parse ends reading, and the status is the
    // handler's own.
    if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY) return nullptr;
    return new UnparsedRequestInterceptor();
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
UnparsedRequestInterceptorFactory() {
  return std::make_unique<UnparsedRequestInterceptorFactoryImpl>();
}

}  // namespace cops
