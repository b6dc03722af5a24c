#ifndef COPS_TESTS_TESTING_NET_H_
#define COPS_TESTS_TESTING_NET_H_

// Loopback networking for end-to-end tests: a free port to give a server, whether a server
// accepts connections yet, and a plain HTTP GET, as Prometheus scrapes copsd's and
// cops-milter's /metrics.
//
// Thread-safety: plain functions (one socket per call).

#include <string>

namespace cops::testing {

// A 127.0.0.1 port nothing listens on now (the kernel's pick for port 0); 0 if none.
int FreePort();

// Whether something accepts TCP connections on 127.0.0.1:`port`.
bool Accepts(int port);

// The body of GET http://127.0.0.1:<port><path> (HTTP/1.0: the server closes when done);
// "connect failed" or "send failed" when the server cannot be reached.
std::string HttpGet(int port, const std::string& path);

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_NET_H_
