#ifndef COPS_TESTS_SERVER_TEST_CERTIFICATES_H_
#define COPS_TESTS_SERVER_TEST_CERTIFICATES_H_

// Throw-away PKI for TLS tests, made with the openssl command line in the test's own temp
// dir: a CA, a server certificate for localhost/127.0.0.1, client certificates with chosen
// common names, and an unrelated second CA.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/testing/files.h"

namespace cops::testing {

class TestPki {
 public:
  // Creates ca.pem/ca.key, server.pem/server.key and other-ca.pem/other-ca.key in `dir`.
  // Returns false when openssl failed (the test then fails with that message).
  bool Create(const std::filesystem::path& dir) {
    dir_ = dir;
    return MakeCa("ca", "cops-test-ca") && MakeCa("other-ca", "cops-other-ca") &&
           MakeLeaf("server", "localhost", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1");
  }

  // A client certificate `<name>.pem/.key` with subject CN=`cn`, signed by `ca` ("ca" or
  // "other-ca").
  bool MakeClient(const std::string& name, const std::string& cn, const std::string& ca = "ca") {
    return MakeLeaf(name, cn, ca, "extendedKeyUsage=clientAuth");
  }

  std::string Path(const std::string& file) const { return (dir_ / file).string(); }
  std::string Pem(const std::string& file) const { return ReadFileOrEmpty(dir_ / file); }

 private:
  bool Run(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
  }
  bool MakeCa(const std::string& name, const std::string& cn) {
    return Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
               " -subj /CN=" + cn + " -keyout " + Path(name + ".key") + " -out " +
               Path(name + ".pem"));
  }
  bool MakeLeaf(const std::string& name, const std::string& cn, const std::string& ca,
                const std::string& extension) {
    std::ofstream(dir_ / (name + ".ext")) << extension << "\n";
    return Run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" +
               cn + " -keyout " + Path(name + ".key") + " -out " + Path(name + ".csr")) &&
           Run("openssl x509 -req -days 2 -in " + Path(name + ".csr") + " -CA " +
               Path(ca + ".pem") + " -CAkey " + Path(ca + ".key") + " -CAcreateserial -out " +
               Path(name + ".pem") + " -extfile " + Path(name + ".ext"));
  }

  std::filesystem::path dir_;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_SERVER_TEST_CERTIFICATES_H_
