#ifndef COPS_TESTS_TESTING_HTTP_H_
#define COPS_TESTS_TESTING_HTTP_H_

// A plain HTTP GET on loopback, as Prometheus scrapes copsd's and cops-milter's /metrics.
//
// Thread-safety: a plain function (one socket per call).

#include <string>

namespace cops::testing {

// The body of GET http://127.0.0.1:<port><path> (HTTP/1.0: the server closes when done);
// "connect failed" or "send failed" when the server cannot be reached.
std::string HttpGet(int port, const std::string& path);

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_HTTP_H_
