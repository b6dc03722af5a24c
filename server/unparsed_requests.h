#ifndef COPS_SERVER_UNPARSED_REQUESTS_H_
#define COPS_SERVER_UNPARSED_REQUESTS_H_

// A request message that does not parse never reaches a handler: gRPC answers it by itself
// with INTERNAL and an empty message (grpcpp's protobuf reader), most often because a proto3
// string field (a title, an author, a collection, an external id) holds bytes that are not
// UTF-8, which protobuf refuses, e.g. a Latin-1 title from a client other than cops. This
// interceptor turns that answer of a unary call into INVALID_ARGUMENT saying so; the handlers
// never answer INTERNAL without a message. (A streaming call's message that does not parse
// ends the stream's reading: its handler answers for the messages before it.)

#include <memory>

#include "grpcpp/support/server_interceptor.h"

namespace cops {

// For grpc::ServerBuilder::experimental().SetInterceptorCreators(), before any interceptor
// that records the status sent (the metrics'), so that they see INVALID_ARGUMENT.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
UnparsedRequestInterceptorFactory();

}  // namespace cops

#endif  // COPS_SERVER_UNPARSED_REQUESTS_H_
