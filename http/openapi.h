#ifndef COPS_HTTP_OPENAPI_H_
#define COPS_HTTP_OPENAPI_H_

// The OpenAPI 3 description of the HTTP API (http/api.h), served at
// GET /v1/openapi.json. tests/http/api_test.cc validates it with a standard
// validator and checks that every route the server answers is in it.

#include <string_view>

namespace cops {

std::string_view OpenApiJson();

}  // namespace cops

#endif  // COPS_HTTP_OPENAPI_H_
