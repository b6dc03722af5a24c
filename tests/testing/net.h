#ifndef COPS_TESTS_TESTING_NET_H_
#define COPS_TESTS_TESTING_NET_H_

// Loopback networking for end-to-end tests: a free port to give a server, whether a server
// accepts connections yet, and a plain HTTP GET, as Prometheus scrapes copsd's and
// cops-milter's /metrics.
//
// Thread-safety: plain functions (one socket per call).

#include <optional>
#include <string>

namespace cops::testing {

// A 127.0.0.1 port nothing listens on now (the kernel's pick for port 0); 0 if none.
int FreePort();

// A 127.0.0.1 port nothing is bound to now, below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), picked at random; 0 if none was found. For ports that stay
// unbound a while after they are chosen (a cluster's routes, dialled before their servers
// listen): the kernel never hands such a port to an outgoing connection in between, and a
// connection retried to a port in the ephemeral range can end up connected to itself.
int FreePortBelowEphemeralRange();

// A port for a server that is stopped and started again on it while its clients keep
// dialling (a restart, a killed replica): FreePortBelowEphemeralRange(), else FreePort(). In
// the ephemeral range the port could be taken meanwhile by another test's bind(0), or by one
// of the clients' retried connections, connected to itself.
int PortToRestartOn();

// Whether something accepts TCP connections on 127.0.0.1:`port`.
bool Accepts(int port);

// The body of GET http://127.0.0.1:<port><path> (HTTP/1.0: the server closes when done);
// "connect failed" or "send failed" when the server cannot be reached.
std::string HttpGet(int port, const std::string& path);

// The value of `series` (a metric's name and labels as exposed, e.g.
// `cops_checks_total{verdict="clean"}`) in a Prometheus text exposition; nullopt when no line
// holds it.
std::optional<double> ExposedValue(const std::string& exposition, const std::string& series);

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_NET_H_
