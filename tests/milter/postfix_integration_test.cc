// End to end with the real thing: Debian's Postfix on loopback (a throw-away config and queue
// directory, no relay, local delivery to a mailbox file), wired to cops-milter and a copsd,
// mail sent with swaks. Asserts on what was delivered (headers), rejected (the SMTP reply)
// and quarantined (Postfix's hold queue), and on fail-closed / fail-open when copsd is down.
//
// Needs root (the Postfix master starts as root and drops to the postfix user), and the
// postfix and swaks packages (scripts/install-deps.sh); skips, saying which, without them.

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/documents.h"
#include "tests/testing/files.h"
#include "tests/testing/net.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;
using testing::Accepts;
using testing::BuildDir;
using testing::FreePort;
using testing::PortToRestartOn;
using testing::ReadFileOrEmpty;
using testing::Spawn;
using testing::WaitExit;
using testing_corpus::Corpus;
using testing_corpus::ParagraphInsideNewText;
using testing_corpus::UnrelatedText;

constexpr char kRecipient[] = "nobody@cops-test.localdomain";
// A second local domain, under the live milter's per-domain policy.
constexpr char kStrictRecipient[] = "nobody@strict.localdomain";

void WriteFile(const fs::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// Runs a command to completion; its exit code and output (stdout and stderr).
int RunCommand(const std::vector<std::string>& argv, const fs::path& out_file, std::string* out) {
  fs::remove(out_file);
  const int code = WaitExit(Spawn(argv, {}, out_file, out_file));
  if (out != nullptr) *out = ReadFileOrEmpty(out_file);
  return code;
}

// Whether a unix socket at `path` accepts connections.
bool AcceptsUnix(const fs::path& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

bool OnPath(const std::string& program) {
  return WaitExit(Spawn({"sh", "-c", "command -v " + program}, {}, "/dev/null", "/dev/null")) == 0;
}

// One message in RFC 5322 form with a unique subject and a plain-text body.
std::string Message(const std::string& subject, const std::string& body,
                    const std::string& extra_headers = "") {
  std::string m = "From: sender@example.org\r\nTo: " + std::string(kRecipient) +
                  "\r\nSubject: " + subject + "\r\n" + extra_headers + "\r\n";
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) m += line + "\r\n";
  return m;
}

// The same with `text` as a PDF attachment (minutes.pdf) next to a short note: the
// milter's converter workers parse it.
std::string MessageWithPdf(const std::string& subject, const std::string& text) {
  std::vector<std::string> paragraphs;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find("\n\n", at);
    if (end == std::string::npos) end = text.size();
    paragraphs.push_back(text.substr(at, end - at));
    at = end + 2;
  }
  const std::string base64 = testing::Base64(testing::MakePdfFromParagraphs(paragraphs));
  std::string m = "From: sender@example.org\r\nTo: " + std::string(kRecipient) +
                  "\r\nSubject: " + subject +
                  "\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"xx\"\r\n\r\n"
                  "--xx\r\nContent-Type: text/plain\r\n\r\nThe minutes are attached.\r\n"
                  "--xx\r\nContent-Type: application/pdf; name=\"minutes.pdf\"\r\n"
                  "Content-Disposition: attachment; filename=\"minutes.pdf\"\r\n"
                  "Content-Transfer-Encoding: base64\r\n\r\n";
  std::istringstream in(base64);
  for (std::string line; std::getline(in, line);) m += line + "\r\n";
  return m + "--xx--\r\n";
}

class PostfixMilterTest : public ::testing::Test {
 protected:
  // What this machine lacks for the test, said exactly; "" when it has everything.
  static std::string Missing() {
    if (getuid() != 0) return "needs root: the Postfix master starts as root";
    for (const char* program : {"postfix", "swaks"}) {
      if (!OnPath(program)) {
        return std::string(program) + " is not installed (scripts/install-deps.sh)";
      }
    }
    if (getpwnam("postfix") == nullptr) {
      return "no postfix user: Postfix's daemons run as it (install the postfix package, "
             "whose postinst creates it)";
    }
    if (getgrnam("postdrop") == nullptr) {
      return "no postdrop group: Postfix's setgid_group (install the postfix package)";
    }
    return "";
  }

  // Set-up failures are kept, not asserted: a failure inside SetUpTestSuite makes GoogleTest
  // skip every test of the suite without a word (and ctest counts them as skipped).
  static void SetUpTestSuite() {
    skip_ = Missing();
    if (!skip_.empty()) return;
    temp_dir_ = new testing::TempDir("cops_postfix");
    dir_ = &temp_dir_->path();
    // Postfix's daemons run as the postfix user: they must reach into the directory.
    chmod(dir_->c_str(), 0755);
    skip_ = UnsearchableForPostfix(*dir_);
    if (!skip_.empty()) return;
    // CopsdRestartIsPickedUp restarts copsd on its port while the milter keeps dialling it,
    // and the milters whose copsd is down dial theirs all along.
    setup_error_ = StartCopsd(PortToRestartOn());
    if (setup_error_.empty()) setup_error_ = RegisterSecrets();
    if (!setup_error_.empty()) return;
    // The milter Postfix normally uses, on a unix socket as the README advises: fail closed;
    // the collections and recipient domains choose the action.
    WriteFile(*dir_ / "live.json",
              R"({"collection_actions": {"held": "quarantine", "secret": "reject"},
                  "domains": {"strict.localdomain": {"action": "reject"}},
                  "on_failure": "tempfail", "stats_interval_s": 0})");
    live_metrics_port_ = FreePort();
    live_milter_ = StartMilter("unix:" + LiveSocket().string(), copsd_port_, "live",
                               {"--metrics-listen", "127.0.0.1:" + std::to_string(live_metrics_port_)});
    // Postfix's daemons run as the postfix user; the socket is root's (cops-milter's umask).
    chmod(LiveSocket().c_str(), 0666);
    // Two milters whose copsd is down: one fails closed, one fails open.
    const int dead_copsd = PortToRestartOn();
    closed_milter_port_ = FreePort();
    WriteFile(*dir_ / "closed.json", R"({"on_failure": "tempfail", "timeout_ms": 500})");
    closed_milter_ = StartMilter(InetAddress(closed_milter_port_), dead_copsd, "closed");
    open_milter_port_ = FreePort();
    WriteFile(*dir_ / "open.json", R"({"on_failure": "accept", "timeout_ms": 500})");
    open_milter_ = StartMilter(InetAddress(open_milter_port_), dead_copsd, "open");
    if (setup_error_.empty()) setup_error_ = StartPostfix();
  }

  static void TearDownTestSuite() {
    if (dir_ == nullptr) return;
    std::string out;
    RunCommand({"postfix", "-c", (*dir_ / "etc").string(), "stop"}, *dir_ / "stop.out", &out);
    const pid_t children[] = {live_milter_, closed_milter_, open_milter_, copsd_};
    for (pid_t pid : children) {
      if (pid > 0) kill(pid, SIGTERM);
    }
    for (pid_t pid : children) {
      if (pid > 0) WaitExit(pid);
    }
    // The master may take a moment to take its daemons down before the queue goes.
    WaitFor(
        [] {
          return RunCommand({"postfix", "-c", (*dir_ / "etc").string(), "status"},
                            *dir_ / "status.out", nullptr) != 0;
        },
        std::chrono::seconds(10));
    delete temp_dir_;  // removes the directory
    temp_dir_ = nullptr;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(dir_, nullptr);
    ASSERT_EQ(setup_error_, "") << "the suite's set-up failed";
  }

  // "" once copsd serves; else what went wrong.
  static std::string StartCopsd(int port) {
    fs::remove(*dir_ / "copsd.port");
    copsd_ = Spawn({BuildDir() + "/server/copsd", "--data-dir", (*dir_ / "cops").string(),
                    "--listen", "127.0.0.1:" + std::to_string(port), "--port-file",
                    (*dir_ / "copsd.port").string(), "--log-level", "warn"},
                   {}, *dir_ / "copsd.log", *dir_ / "copsd.log");
    if (!WaitFor([] { return fs::exists(*dir_ / "copsd.port"); }, std::chrono::seconds(30))) {
      return "copsd wrote no port file within 30 s: " + ReadFileOrEmpty(*dir_ / "copsd.log");
    }
    copsd_port_ = std::stoi(ReadFileOrEmpty(*dir_ / "copsd.port"));
    return "";
  }

  static std::string RegisterSecrets() {
    ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(copsd_port_);
    auto client = Client::Connect(options);
    if (!client.ok()) return "cannot connect to copsd: " + client.status().ToString();
    const char* collections[] = {"public", "held", "secret"};
    for (int i = 0; i < 3; ++i) {
      v1::Document doc;
      doc.set_content(Corpus()[i].body);
      doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
      doc.mutable_metadata()->set_collection(collections[i]);
      auto reply = (*client)->Register(doc);
      if (!reply.ok()) return "cannot register the secrets: " + reply.status().ToString();
      doc_ids_[i] = reply->doc_id();
    }
    return "";
  }

  static fs::path LiveSocket() { return *dir_ / "milter.sock"; }
  static std::string InetAddress(int port) { return "inet:" + std::to_string(port) + "@127.0.0.1"; }

  // `listen`: InetAddress(port) or "unix:PATH".
  static pid_t StartMilter(const std::string& listen, int copsd_port, const std::string& name,
                           const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv = {BuildDir() + "/milter/cops-milter", "--listen", listen,
                                     "--server", "127.0.0.1:" + std::to_string(copsd_port),
                                     "--action", "headers",
                                     "--config", (*dir_ / (name + ".json")).string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const pid_t pid = Spawn(argv, {}, *dir_ / (name + ".log"), *dir_ / (name + ".log"));
    // The issue's promise: listening within seconds of starting.
    if (!WaitFor(
            [&listen] {
              return listen.starts_with("unix:") ? AcceptsUnix(listen.substr(5))
                                                 : Accepts(std::stoi(listen.substr(5)));
            },
            std::chrono::seconds(5)) &&
        setup_error_.empty()) {
      setup_error_ = "cops-milter " + name + " does not listen on " + listen +
                     " within 5 s: " + ReadFileOrEmpty(*dir_ / (name + ".log"));
    }
    return pid;
  }

  // The first directory on the way to `path` (itself included) that the postfix user cannot
  // search, said with its mode and owner; "" when there is none. Postfix's master opens its
  // lock file in data_directory as that user (mail_owner), and its daemons work in the queue
  // as it: no set-up of ours helps when a directory above ours shuts it out. A child takes
  // the user's identity and asks the kernel (ACLs and all).
  static std::string UnsearchableForPostfix(const fs::path& path) {
    std::vector<std::string> chain;  // "/", ..., path
    for (fs::path p = path;; p = p.parent_path()) {
      chain.insert(chain.begin(), p.string());
      if (p == p.root_path() || p.empty()) break;
    }
    const passwd* pw = getpwnam("postfix");
    if (pw == nullptr) return "no postfix user";
    const uid_t uid = pw->pw_uid;
    const gid_t gid = pw->pw_gid;
    const pid_t pid = fork();
    if (pid == 0) {  // only async-signal-safe calls: the test process has threads
      if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(255);
      for (size_t i = 0; i < chain.size() && i < 250; ++i) {
        if (access(chain[i].c_str(), X_OK) != 0) _exit(static_cast<int>(i) + 1);
      }
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
      return "cannot check what the postfix user may search (fork)";
    }
    const int code = WEXITSTATUS(status);
    if (code == 0) return "";
    if (code == 255) return "cannot take the postfix user's identity to check its access";
    const std::string& blocked = chain[static_cast<size_t>(code) - 1];
    struct stat st {};
    stat(blocked.c_str(), &st);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "the postfix user cannot search " + blocked + " (mode " + mode + ", owner uid " +
           std::to_string(st.st_uid) + "), on the way to the test's queue and data " +
           "directories under " + path.string() + ": Postfix's master opens its lock file " +
           "there as that user. A system's / and /tmp are searchable by all (a chroot " +
           "unpacked into a mktemp -d directory keeps its 0700: chmod 755 it); with TMPDIR " +
           "set, its directories must be searchable too";
  }

  // "" once Postfix accepts on its ports; else what went wrong, with its log.
  static std::string StartPostfix() {
    const fs::path& d = *dir_;
    // The owners and modes Postfix's own installation gives these (postfix-files; `postfix
    // check` verifies them at start), whatever the umask: the configuration and queue
    // directories root's and searchable (the daemons work in the queue as mail_owner), the
    // data directory mail_owner's alone (master.lock, caches), the mailboxes' directory
    // writable by all and sticky (local(8) creates a mailbox as its recipient).
    struct Directory {
      const char* name;
      mode_t mode;
      bool mail_owners;
    };
    for (const Directory& sub : {Directory{"etc", 0755, false}, Directory{"spool", 0755, false},
                                 Directory{"data", 0700, true}, Directory{"mail", 01777, false}}) {
      const fs::path path = d / sub.name;
      fs::create_directories(path);
      if (sub.mail_owners && chown(path.c_str(), PostfixUid(), PostfixGid()) != 0) {
        return "cannot give " + path.string() + " to the postfix user";
      }
      if (chmod(path.c_str(), sub.mode) != 0) return "cannot set the mode of " + path.string();
    }
    smtp_port_ = FreePort();
    closed_smtp_port_ = FreePort();
    open_smtp_port_ = FreePort();
    auto milter = [](int port) { return "inet:127.0.0.1:" + std::to_string(port); };
    WriteFile(d / "etc" / "main.cf",
              "compatibility_level = 3.6\n"
              "queue_directory = " +
                  (d / "spool").string() +
                  "\n"
                  "data_directory = " +
                  (d / "data").string() +
                  "\n"
                  "mail_owner = postfix\nsetgid_group = postdrop\n"
                  "inet_interfaces = loopback-only\ninet_protocols = ipv4\n"
                  "myhostname = cops-test.localdomain\nmydomain = localdomain\n"
                  "myorigin = $myhostname\n"
                  "mydestination = $myhostname, localhost, strict.localdomain\n"
                  "mynetworks = 127.0.0.0/8\nrelayhost =\nrelay_domains =\n"
                  "smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination\n"
                  "alias_maps =\nalias_database =\nlocal_recipient_maps =\nbiff = no\n"
                  "mail_spool_directory = " +
                  (d / "mail").string() +
                  "\n"
                  "maillog_file_prefixes = " +
                  d.string() +
                  "\n"
                  "maillog_file = " +
                  (d / "maillog").string() +
                  "\n"
                  "smtputf8_enable = no\n"
                  // The lines the README's "Mail gateway" section tells operators to add.
                  "smtpd_milters = unix:" +
                  LiveSocket().string() +
                  "\n"
                  "non_smtpd_milters = unix:" +
                  LiveSocket().string() +
                  "\n"
                  "milter_default_action = tempfail\n"
                  "milter_protocol = 6\n");
    auto smtpd = [&](int port, const std::string& milter_address) {
      std::string line = "127.0.0.1:" + std::to_string(port) + " inet n - n - - smtpd";
      if (!milter_address.empty()) line += "\n  -o smtpd_milters=" + milter_address;
      return line + "\n";
    };
    WriteFile(d / "etc" / "master.cf", smtpd(smtp_port_, "") +
                                           smtpd(closed_smtp_port_, milter(closed_milter_port_)) +
                                           smtpd(open_smtp_port_, milter(open_milter_port_)) +
                                           "cleanup unix n - n - 0 cleanup\n"
                                           "qmgr unix n - n 300 1 qmgr\n"
                                           "rewrite unix - - n - - trivial-rewrite\n"
                                           "bounce unix - - n - 0 bounce\n"
                                           "defer unix - - n - 0 bounce\n"
                                           "trace unix - - n - 0 bounce\n"
                                           "verify unix - - n - 1 verify\n"
                                           "proxymap unix - - n - - proxymap\n"
                                           "smtp unix - - n - - smtp\n"
                                           "relay unix - - n - - smtp\n"
                                           "showq unix n - n - - showq\n"
                                           "error unix - - n - - error\n"
                                           "retry unix - - n - - error\n"
                                           "discard unix - - n - - discard\n"
                                           "local unix - n n - - local\n"
                                           "anvil unix - - n - 1 anvil\n"
                                           "scache unix - - n - 1 scache\n"
                                           "postlog unix-dgram n - n - 1 postlogd\n");
    // Root's and readable by all, as installed (any umask made them 0600).
    chmod((d / "etc" / "main.cf").c_str(), 0644);
    chmod((d / "etc" / "master.cf").c_str(), 0644);
    std::string out;
    if (RunCommand({"postfix", "-c", (d / "etc").string(), "start"}, d / "start.out", &out) !=
        0) {
      return "postfix start failed: " + out + ReadFileOrEmpty(d / "maillog");
    }
    for (int port : {smtp_port_, closed_smtp_port_, open_smtp_port_}) {
      if (!WaitFor([port] { return Accepts(port); }, std::chrono::seconds(10))) {
        return "Postfix does not accept on 127.0.0.1:" + std::to_string(port) +
               " within 10 s: " + ReadFileOrEmpty(d / "maillog");
      }
    }
    return "";
  }

  static uid_t PostfixUid() {
    const passwd* pw = getpwnam("postfix");
    return pw == nullptr ? 0 : pw->pw_uid;
  }
  static gid_t PostfixGid() {
    const passwd* pw = getpwnam("postfix");
    return pw == nullptr ? 0 : pw->pw_gid;
  }

  struct Sent {
    int exit_code;
    std::string transcript;  // swaks's SMTP dialogue
    std::string queue_id;    // from "250 2.0.0 Ok: queued as ID", "" when not queued
  };

  // Sends `message` to `to` (comma-separated recipients).
  static Sent Send(const std::string& message, int port = 0, const std::string& to = kRecipient) {
    static int n = 0;
    const fs::path file = *dir_ / ("message" + std::to_string(++n) + ".eml");
    WriteFile(file, message);
    Sent sent;
    sent.exit_code = RunCommand(
        {"swaks", "--server", "127.0.0.1:" + std::to_string(port ? port : smtp_port_), "--from",
         "sender@example.org", "--to", to, "--data", file.string(), "--timeout", "30"},
        *dir_ / "swaks.out", &sent.transcript);
    const size_t at = sent.transcript.find("queued as ");
    if (at != std::string::npos) {
      const size_t start = at + 10;
      sent.queue_id =
          sent.transcript.substr(start, sent.transcript.find_first_of("\r\n", start) - start);
    }
    return sent;
  }

  // The delivered message whose Subject is `subject`, headers and body; "" if none within
  // `wait`.
  static std::string Delivered(const std::string& subject,
                               std::chrono::milliseconds wait = std::chrono::seconds(20)) {
    std::string found;
    WaitFor(
        [&] {
          const std::string mbox = ReadFileOrEmpty(*dir_ / "mail" / "nobody");
          const size_t at = mbox.find("Subject: " + subject + "\n");
          if (at == std::string::npos) return false;
          size_t begin = mbox.rfind("\nFrom ", at);
          begin = begin == std::string::npos ? 0 : begin + 1;
          const size_t end = mbox.find("\nFrom ", at);
          found = mbox.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
          return true;
        },
        wait);
    return found;
  }

  static std::string MilterLog() { return ReadFileOrEmpty(*dir_ / "live.log"); }

  static inline std::string skip_;         // what the machine lacks: the tests skip
  static inline std::string setup_error_;  // what failed in set-up: the tests fail
  static inline testing::TempDir* temp_dir_ = nullptr;  // one per test program (ctest runs
                                                        // each test in its own)
  static inline const fs::path* dir_ = nullptr;
  static inline pid_t copsd_ = -1, live_milter_ = -1, closed_milter_ = -1, open_milter_ = -1;
  static inline int copsd_port_ = 0, live_metrics_port_ = 0, closed_milter_port_ = 0,
                    open_milter_port_ = 0, smtp_port_ = 0, closed_smtp_port_ = 0,
                    open_smtp_port_ = 0;
  static inline uint64_t doc_ids_[3] = {};
};

TEST_F(PostfixMilterTest, CleanMailIsDeliveredWithACleanVerdict) {
  const Sent sent = Send(Message("clean-1", UnrelatedText()));
  ASSERT_EQ(sent.exit_code, 0) << sent.transcript;
  const std::string mail = Delivered("clean-1");
  ASSERT_FALSE(mail.empty()) << ReadFileOrEmpty(*dir_ / "maillog") << MilterLog();
  EXPECT_NE(mail.find("\nX-COPS-Result: clean\n"), std::string::npos) << mail;
  EXPECT_EQ(mail.find("X-COPS-Matches"), std::string::npos) << mail;
  // One structured line for the message, with Postfix's queue id.
  EXPECT_NE(MilterLog().find("milter_message queue_id=" + sent.queue_id + " verdict=clean"),
            std::string::npos)
      << MilterLog();
}

TEST_F(PostfixMilterTest, ExcerptIsDeliveredWithTheViolationHeaders) {
  const Sent sent = Send(Message("excerpt-1", ParagraphInsideNewText(Corpus()[0].body)));
  ASSERT_EQ(sent.exit_code, 0) << sent.transcript;
  const std::string mail = Delivered("excerpt-1");
  ASSERT_FALSE(mail.empty()) << ReadFileOrEmpty(*dir_ / "maillog") << MilterLog();
  EXPECT_NE(mail.find("\nX-COPS-Result: violation (1 document, best ratio "), std::string::npos)
      << mail;
  EXPECT_NE(mail.find("\nX-COPS-Matches: doc=" + std::to_string(doc_ids_[0]) + " ratio="),
            std::string::npos)
      << mail;
  EXPECT_NE(mail.find("collection=public part=message"), std::string::npos) << mail;
}

TEST_F(PostfixMilterTest, ForgedVerdictHeadersAreReplaced) {
  const Sent sent = Send(Message("forged-1", UnrelatedText(),
                                 "X-COPS-Result: violation (forged)\r\n"
                                 "X-COPS-Matches: doc=1 ratio=1.000\r\n"));
  ASSERT_EQ(sent.exit_code, 0) << sent.transcript;
  const std::string mail = Delivered("forged-1");
  ASSERT_FALSE(mail.empty()) << ReadFileOrEmpty(*dir_ / "maillog");
  EXPECT_EQ(mail.find("violation (forged)"), std::string::npos) << mail;
  EXPECT_EQ(mail.find("X-COPS-Matches"), std::string::npos) << mail;
  EXPECT_NE(mail.find("\nX-COPS-Result: clean\n"), std::string::npos) << mail;
}

TEST_F(PostfixMilterTest, SecretCollectionIsRejectedWithThe5xxReply) {
  const Sent sent = Send(Message("secret-1", ParagraphInsideNewText(Corpus()[2].body)));
  EXPECT_NE(sent.exit_code, 0);
  EXPECT_NE(sent.transcript.find("550 5.7.1 Message contains registered confidential text"),
            std::string::npos)
      << sent.transcript << MilterLog();
  EXPECT_TRUE(sent.queue_id.empty());  // never queued, so never delivered
}

TEST_F(PostfixMilterTest, RecipientDomainPolicyRejectsWhatOtherDomainsOnlyTag) {
  // The excerpt of a "public" document: headers only for the default domain (as above), but
  // strict.localdomain's entry rejects it.
  const std::string excerpt = ParagraphInsideNewText(Corpus()[0].body);
  const Sent strict = Send(Message("domain-1", excerpt), 0, kStrictRecipient);
  EXPECT_NE(strict.exit_code, 0);
  EXPECT_NE(strict.transcript.find("550 5.7.1"), std::string::npos)
      << strict.transcript << MilterLog();
  EXPECT_TRUE(strict.queue_id.empty());
  EXPECT_NE(MilterLog().find("action=reject parts=1 docs=" + std::to_string(doc_ids_[0])),
            std::string::npos)
      << MilterLog();
  EXPECT_NE(MilterLog().find("domains=strict.localdomain"), std::string::npos);
  // To both domains: checked under both policies, and the strongest action applies.
  const Sent both =
      Send(Message("domain-2", excerpt), 0, std::string(kRecipient) + "," + kStrictRecipient);
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.transcript.find("550 5.7.1"), std::string::npos) << both.transcript;
  // Clean mail to the strict domain is delivered with its verdict.
  const Sent clean = Send(Message("domain-3", UnrelatedText()), 0, kStrictRecipient);
  ASSERT_EQ(clean.exit_code, 0) << clean.transcript;
  EXPECT_NE(Delivered("domain-3").find("\nX-COPS-Result: clean\n"), std::string::npos);
}

TEST_F(PostfixMilterTest, HeldCollectionInAPdfAttachmentIsQuarantined) {
  const Sent sent = Send(MessageWithPdf("held-1", ParagraphInsideNewText(Corpus()[1].body)));
  ASSERT_EQ(sent.exit_code, 0) << sent.transcript;
  ASSERT_FALSE(sent.queue_id.empty()) << sent.transcript;
  // Postfix keeps a quarantined message in its hold queue, undelivered.
  EXPECT_TRUE(WaitFor([&] { return fs::exists(*dir_ / "spool" / "hold" / sent.queue_id); },
                      std::chrono::seconds(10)))
      << ReadFileOrEmpty(*dir_ / "maillog") << MilterLog();
  const std::string held = ReadFileOrEmpty(*dir_ / "spool" / "hold" / sent.queue_id);
  EXPECT_NE(held.find("X-COPS-Matches"), std::string::npos);
  EXPECT_NE(held.find("part=minutes.pdf"), std::string::npos) << held;
  EXPECT_TRUE(Delivered("held-1", std::chrono::milliseconds(0)).empty());
}

TEST_F(PostfixMilterTest, CopsdDownFailsClosedOrOpenAsConfigured) {
  const Sent closed = Send(Message("down-closed", UnrelatedText()), closed_smtp_port_);
  EXPECT_NE(closed.exit_code, 0);
  EXPECT_NE(closed.transcript.find("451 4.7.1"), std::string::npos) << closed.transcript;
  const Sent open = Send(Message("down-open", UnrelatedText()), open_smtp_port_);
  ASSERT_EQ(open.exit_code, 0) << open.transcript;
  const std::string mail = Delivered("down-open");
  ASSERT_FALSE(mail.empty()) << ReadFileOrEmpty(*dir_ / "maillog");
  // Let through unchecked, and marked so: not "clean".
  EXPECT_NE(mail.find("\nX-COPS-Result: unchecked ("), std::string::npos) << mail;
  EXPECT_EQ(mail.find("X-COPS-Result: clean"), std::string::npos) << mail;
  EXPECT_NE(ReadFileOrEmpty(*dir_ / "open.log").find("action=on_failure_accept"), std::string::npos);
}

TEST_F(PostfixMilterTest, CopsdRestartIsPickedUp) {
  // Each step's message carries the logs that tell its failure's cause (this test once failed
  // in a parallel run, and which step was not recorded).
  kill(copsd_, SIGTERM);
  ASSERT_EQ(WaitExit(copsd_), 0) << ReadFileOrEmpty(*dir_ / "copsd.log");
  copsd_ = -1;
  const Sent during = Send(Message("restart-down", UnrelatedText()));
  EXPECT_NE(during.transcript.find("451 4.7.1"), std::string::npos)
      << during.transcript << MilterLog();
  ASSERT_EQ(StartCopsd(copsd_port_), "");
  // The milter's channel reconnects within about a second.
  Sent after;
  for (int i = 0; i < 20; ++i) {
    after = Send(Message("restart-up", ParagraphInsideNewText(Corpus()[0].body)));
    if (after.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_EQ(after.exit_code, 0) << after.transcript << MilterLog()
                                << ReadFileOrEmpty(*dir_ / "copsd.log");
  const std::string mail = Delivered("restart-up");
  EXPECT_NE(mail.find("\nX-COPS-Result: violation"), std::string::npos)
      << mail << ReadFileOrEmpty(*dir_ / "maillog") << MilterLog();
}

// The live milter's counters at its --metrics-listen, as Prometheus scrapes them.
TEST_F(PostfixMilterTest, CountersAreServedToPrometheus) {
  const Sent clean = Send(Message("metrics-clean", UnrelatedText()));
  ASSERT_EQ(clean.exit_code, 0) << clean.transcript;
  const Sent copied = Send(Message("metrics-excerpt", ParagraphInsideNewText(Corpus()[0].body)));
  ASSERT_EQ(copied.exit_code, 0) << copied.transcript;
  const std::string text = testing::HttpGet(live_metrics_port_, "/metrics");
  // The counters of this test's milter (ctest runs each test in a process of its own).
  EXPECT_NE(text.find("cops_milter_messages_total{verdict=\"clean\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_milter_messages_total{verdict=\"violation\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_milter_messages_total{verdict=\"unchecked\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_milter_message_seconds_count 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_milter_message_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_milter_parts_total 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_milter_checking 0\n"), std::string::npos) << text;
  // Debian's promtool accepts the exposition (scripts/install-deps.sh installs it).
  if (!OnPath("promtool")) GTEST_SKIP() << "promtool is not installed (scripts/install-deps.sh)";
  WriteFile(*dir_ / "milter.metrics", text);
  std::string out;
  EXPECT_EQ(RunCommand({"sh", "-c", "promtool check metrics < " + (*dir_ / "milter.metrics").string()},
                       *dir_ / "promtool.out", &out),
            0)
      << out;
}

TEST_F(PostfixMilterTest, SigtermStopsTheMilterPromptly) {
  // The live milter, with its connection from Postfix open and a converter worker started.
  const Sent sent = Send(MessageWithPdf("stop-1", UnrelatedText()));
  ASSERT_EQ(sent.exit_code, 0) << sent.transcript;
  ASSERT_NE(MilterLog().find("queue_id=" + sent.queue_id + " verdict=clean action=accept parts=2"),
            std::string::npos)
      << MilterLog();
  const pid_t pid = live_milter_;
  live_milter_ = -1;
  const auto start = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 0) << MilterLog();
  // Within a second on an idle machine (README, "Mail gateway"); the bound only catches a
  // milter that waits out libmilter's own timeouts (minutes) instead of stopping.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(MilterLog().find("milter_stopped"), std::string::npos);
}

}  // namespace
}  // namespace cops
