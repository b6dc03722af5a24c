// The web page of copsd --http-listen (http/page.h, http/page/*): its files as the server
// holds them, and the page used in a real Chromium (tests/http/page_test.py, driven through
// Debian's chromedriver and python3-selenium) against a real copsd with authentication on.

#include "http/page.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "client/html_report.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/testing/copsd_process.h"
#include "tests/testing/documents.h"
#include "tests/testing/eventually.h"
#include "tests/testing/files.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

std::string Asset(std::string_view path) {
  for (const PageAsset& asset : PageAssets()) {
    if (asset.path == path) return std::string(asset.body);
  }
  return "";
}

TEST(PageAssetsTest, ThePageLoadsOnlyItsOwnFilesAndNoInlineScriptOrStyle) {
  const std::string html = Asset("/");
  ASSERT_NE(html.find("<script src=\"/app.js\" defer></script>"), std::string::npos);
  EXPECT_NE(html.find("<link rel=\"stylesheet\" href=\"/app.css\">"), std::string::npos);
  // The upload control is in the page, hidden (with its section) until sign-in.
  EXPECT_NE(html.find("<section id=\"workspace\" hidden"), std::string::npos);
  EXPECT_NE(html.find("id=\"check-files\" name=\"file\" type=\"file\" multiple"),
            std::string::npos);
  EXPECT_EQ(html.find("style="), std::string::npos);
  EXPECT_EQ(html.find("<style"), std::string::npos);
  for (const char* handler : {"onclick", "onload", "onsubmit", "onerror", "http://", "https://"}) {
    EXPECT_EQ(html.find(handler), std::string::npos) << handler;
  }
  const std::string js = Asset("/app.js");
  EXPECT_EQ(js.find("innerHTML"), std::string::npos);
  EXPECT_EQ(js.find("outerHTML"), std::string::npos);
  EXPECT_EQ(js.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(js.find("eval("), std::string::npos);
  EXPECT_EQ(js.find("http://"), std::string::npos);
}

// The report's colours are client/html_report.cc's: the page's style sheet has them all.
TEST(PageAssetsTest, TheSourceColoursAreThoseOfTheHtmlReport) {
  const std::string css = Asset("/app.css");
  for (size_t i = 0; i < 12; ++i) {
    const std::string rule =
        ".src-" + std::to_string(i) + " { background: " + SourceColour(i) + "; }";
    EXPECT_NE(css.find(rule), std::string::npos) << rule;
    const std::string tint =
        "td.passage.tint-" + std::to_string(i) + " { background: " + SourceColour(i) + "33; }";
    EXPECT_NE(css.find(tint), std::string::npos) << tint;
  }
  EXPECT_EQ(SourceColour(12), SourceColour(0)) << "app.js cycles through 12 colours";
}

// copsd in `dir` with authentication off and `flags`, serving HTTP on a free loopback port
// (*http_port; copsd writes its file before the gRPC one, which Start() waits for).
absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> StartWithoutAuthentication(
    const fs::path& dir, const std::vector<std::string>& flags, int* http_port) {
  const fs::path port_file = dir / "http.port";
  std::vector<std::string> all = {
      "--auth", "off", "--http-listen", "127.0.0.1:0", "--http-port-file", port_file.string()};
  all.insert(all.end(), flags.begin(), flags.end());
  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> copsd =
      testing::CopsdProcess::Start(dir, all);
  if (copsd.ok()) *http_port = std::stoi(testing::ReadFileOrEmpty(port_file));
  return copsd;
}

// Where authentication is off, the page needs no key: the session says so.
TEST(WebPageTest, WithoutAuthenticationThePageNeedsNoKey) {
  testing::TempDir dir;
  int http_port = 0;
  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> copsd =
      StartWithoutAuthentication(dir.path(), {}, &http_port);
  ASSERT_TRUE(copsd.ok()) << copsd.status();
  httplib::Client http("127.0.0.1", http_port);
  httplib::Result session = http.Get("/v1/session");
  ASSERT_TRUE(session);
  EXPECT_EQ(session->body, R"({"auth_required":false,"check_defaults":{"heavy_revisions":true},)"
                           R"("credential":"none","may_register":true,"principal":""})");
  httplib::Result page = http.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Security-Policy"), kPageContentSecurityPolicy);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<input id=\"check-files\""), std::string::npos);
  EXPECT_EQ((*copsd)->Stop(), 0);
}

// copsd looks for heavy revisions by default: the session tells the page (whose box then
// starts ticked), and a check over HTTP that does not say looks for them; one that says false
// does not.
TEST(WebPageTest, TheServersHeavyRevisionDefaultReachesThePageAndTheApi) {
  testing::TempDir dir;
  int http_port = 0;
  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> copsd =
      StartWithoutAuthentication(dir.path(), {}, &http_port);
  ASSERT_TRUE(copsd.ok()) << copsd.status();
  httplib::Client http("127.0.0.1", http_port);
  httplib::Result session = http.Get("/v1/session");
  ASSERT_TRUE(session);
  EXPECT_EQ(nlohmann::json::parse(session->body)["check_defaults"]["heavy_revisions"], true)
      << session->body;
  httplib::Result registered =
      http.Post("/v1/documents?title=Irrigation", testing::kDripIrrigation.source, "text/plain");
  ASSERT_TRUE(registered);
  ASSERT_EQ(registered->status, 201) << registered->body;
  httplib::Result unsaid = http.Post("/v1/checks", testing::kDripIrrigation.reworded, "text/plain");
  ASSERT_TRUE(unsaid);
  ASSERT_EQ(unsaid->status, 200) << unsaid->body;
  const nlohmann::json by_default = nlohmann::json::parse(unsaid->body);
  EXPECT_EQ(by_default["params"]["heavy_revisions"], true);
  EXPECT_EQ(by_default["violation"], true) << unsaid->body;
  httplib::Result refused = http.Post("/v1/checks?heavy_revisions=false",
                                      testing::kDripIrrigation.reworded, "text/plain");
  ASSERT_TRUE(refused);
  ASSERT_EQ(refused->status, 200) << refused->body;
  const nlohmann::json said = nlohmann::json::parse(refused->body);
  EXPECT_EQ(said["params"]["heavy_revisions"], false);
  EXPECT_EQ(said["violation"], false) << refused->body;
  EXPECT_EQ((*copsd)->Stop(), 0);
}

// Debian's python3 (python3-selenium is installed for it, not for another python3 on PATH).
constexpr char kPython[] = "/usr/bin/python3";

std::string RunCommand(const std::string& command, int* exit_code) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    *exit_code = -1;
    return "";
  }
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

// Why the browser tests cannot run here, or "" when they can.
std::string MissingBrowserTools() {
  for (const char* tool : {"/usr/bin/chromium", "/usr/bin/chromedriver", kPython}) {
    if (access(tool, X_OK) != 0) {
      return std::string(tool) + " is missing: scripts/install-deps.sh installs chromium, " +
             "chromium-driver and python3-selenium";
    }
  }
  int code = 0;
  RunCommand(std::string(kPython) + " -c 'import selenium'", &code);
  if (code != 0) return "python3-selenium is missing: scripts/install-deps.sh installs it";
  return "";
}

// An owner signs in, registers a text through the page, uploads a DOCX copying it, a clean DOCX, a
// file that is not the PDF it claims to be and a file named with HTML, pastes a copy, and reads the
// reports, the error and the owner's matches (tests/http/page_test.py says what it asserts).
// COPS_PAGE_SCREENSHOT=FILE keeps the screenshot it takes (docs/images/web-page.png).
// The page of a copsd --heavy-revisions=false starts with its heavy-revision box unticked
// (the page's own default is ticked, as copsd's), in Chromium.
TEST(WebPageTest, ThePagesHeavyRevisionBoxStartsAsTheServerDecides) {
  if (const std::string missing = MissingBrowserTools(); !missing.empty()) GTEST_SKIP() << missing;
  testing::TempDir dir;
  int http_port = 0;
  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> copsd =
      StartWithoutAuthentication(dir.path(), {"--heavy-revisions=false"}, &http_port);
  ASSERT_TRUE(copsd.ok()) << copsd.status();
  int code = 0;
  const std::string output =
      RunCommand(std::string(kPython) + " " + COPS_HTTP_TEST_SOURCE_DIR +
                     "/tests/http/page_test.py --heavy-revisions-off --url http://127.0.0.1:" +
                     std::to_string(http_port),
                 &code);
  EXPECT_EQ(code, 0) << output;
  EXPECT_EQ((*copsd)->Stop(), 0);
}

// An editor drops more manuscripts on the page than copsd keeps waiting for one caller, and
// than it keeps waiting at all: the page submits a few at a time and tries again while copsd
// is busy, so each is checked (before, all were submitted at once and most were refused).
TEST(WebPageTest, MoreManuscriptsThanTheServerQueuesAreAllChecked) {
  if (const std::string missing = MissingBrowserTools(); !missing.empty()) GTEST_SKIP() << missing;
  testing::TempDir dir;
  const fs::path docs = dir.path() / "docs";
  fs::create_directories(docs);
  for (int i = 0; i < 12; ++i) {
    std::ofstream(docs / ("manuscript-" + std::to_string(100 + i) + ".txt"))
        << testing::MakeText(testing::Prose(3, 500 + i));
  }
  int http_port = 0;
  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> copsd =
      StartWithoutAuthentication(dir.path(),
                                 {"--http-job-workers", "1", "--http-max-queued-jobs", "2",
                                  "--http-max-queued-jobs-per-caller", "1"},
                                 &http_port);
  ASSERT_TRUE(copsd.ok()) << copsd.status();
  int code = 0;
  const std::string output =
      RunCommand(std::string(kPython) + " " + COPS_HTTP_TEST_SOURCE_DIR +
                     "/tests/http/page_test.py --many --dir " + docs.string() +
                     " --url http://127.0.0.1:" + std::to_string(http_port),
                 &code);
  EXPECT_EQ(code, 0) << output << "\ncopsd's log:\n" << (*copsd)->Log();
  EXPECT_EQ((*copsd)->Stop(), 0);
}

TEST(WebPageTest, AnEditorChecksManuscriptsInChromium) {
  if (const std::string missing = MissingBrowserTools(); !missing.empty()) GTEST_SKIP() << missing;
  int code = 0;
  // The source tree, from the build (ctest's ENVIRONMENT carries only COPS_BUILD_DIR).
  const std::string source_dir = COPS_HTTP_TEST_SOURCE_DIR;

  testing::TempDir dir;
  const fs::path docs = dir.path() / "docs";
  fs::create_directories(docs);
  const std::vector<std::string> source = testing::Prose(4, 7);
  std::vector<std::string> copied = source;
  copied.insert(copied.begin(), "An introduction in the writer's own words comes first.");
  std::ofstream(docs / "source.txt") << testing::MakeText(source);
  std::ofstream(docs / "copy.docx", std::ios::binary) << testing::MakeDocx(copied);
  std::ofstream(docs / "clean.docx", std::ios::binary) << testing::MakeDocx(testing::Prose(3, 99));
  std::ofstream(docs / "broken.pdf", std::ios::binary) << "%PDF-1.4\nthis is no PDF at all\n";
  std::ofstream(docs / "irrigation.txt") << testing::kDripIrrigation.source;
  for (const char* name : {"reworded.txt", "reworded-again.txt"}) {
    std::ofstream(docs / name) << testing::kDripIrrigation.reworded;
  }
  std::ofstream(docs / "<img src=x onerror=alert(1)> name.txt")
      << testing::MakeText(testing::Prose(2, 1234));

  const fs::path http_port_file = dir.path() / "http.port";
  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> copsd =
      testing::CopsdProcess::Start(dir.path(), {"--auth", "on", "--http-listen", "127.0.0.1:0",
                                                "--http-port-file", http_port_file.string()});
  ASSERT_TRUE(copsd.ok()) << copsd.status();
  // copsd writes the HTTP port file before the gRPC one, which Start() waited for.
  const std::string http_port = testing::ReadFileOrEmpty(http_port_file);
  ASSERT_FALSE(http_port.empty()) << (*copsd)->Log();
  std::string admin_key = testing::ReadFileOrEmpty(dir.path() / "data" / "admin.key");
  while (!admin_key.empty() && admin_key.back() == '\n') admin_key.pop_back();
  ASSERT_FALSE(admin_key.empty());

  // An owner of the collection 'journal', made as an administrator makes one.
  const std::string cops = fs::path(testing::BuildDir()) / "client" / "cops";
  const std::string as_admin =
      cops + " --server " + (*copsd)->address() + " --api-key " + admin_key + " --json admin ";
  std::string output = RunCommand(as_admin + "collection create journal", &code);
  ASSERT_EQ(code, 0) << output;
  output = RunCommand(as_admin + "principal create journal-press --role owner --collection journal",
                      &code);
  ASSERT_EQ(code, 0) << output;
  const nlohmann::json owner = nlohmann::json::parse(output, nullptr, false);
  ASSERT_TRUE(owner.is_object() && owner.contains("api_key")) << output;

  const fs::path screenshot = dir.path() / "web-page.png";
  const std::string command =
      std::string(kPython) + " " + source_dir +
      "/tests/http/page_test.py --url http://127.0.0.1:" + std::to_string(std::stoi(http_port)) +
      " --key " + owner["api_key"].get<std::string>() + " --principal journal-press --dir " +
      docs.string() + " --screenshot " + screenshot.string();
  output = RunCommand(command, &code);
  EXPECT_EQ(code, 0) << output << "\ncopsd's log:\n" << (*copsd)->Log();
  EXPECT_TRUE(fs::exists(screenshot)) << output;
  if (const char* keep = std::getenv("COPS_PAGE_SCREENSHOT"); keep != nullptr && code == 0) {
    fs::copy_file(screenshot, keep, fs::copy_options::overwrite_existing);
  }

  // What the page relies on, for a checker: no owner's part, and no registered text.
  output = RunCommand(as_admin + "principal create pc --role checker --collection journal", &code);
  ASSERT_EQ(code, 0) << output;
  const nlohmann::json checker = nlohmann::json::parse(output, nullptr, false);
  ASSERT_TRUE(checker.is_object() && checker.contains("api_key")) << output;
  httplib::Client http("127.0.0.1", std::stoi(http_port));
  const httplib::Headers as_checker = {
      {"Authorization", "Bearer " + checker["api_key"].get<std::string>()}};
  httplib::Result session = http.Get("/v1/session", as_checker);
  ASSERT_TRUE(session);
  EXPECT_EQ(session->body, R"({"auth_required":true,"check_defaults":{"heavy_revisions":true},)"
                           R"("credential":"api_key","may_register":false,"principal":"pc"})");
  httplib::Result text = http.Get("/v1/documents/1/content", as_checker);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 403) << text->body;
  const httplib::Headers as_owner = {
      {"Authorization", "Bearer " + owner["api_key"].get<std::string>()}};
  text = http.Get("/v1/documents/1/content", as_owner);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 200) << text->body;
  EXPECT_EQ(text->body, testing::MakeText(source));
  EXPECT_EQ(text->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_EQ(text->get_header_value("Content-Disposition"), "attachment");
  EXPECT_EQ(http.Get("/v1/session")->status, 401);
  EXPECT_EQ((*copsd)->Stop(), 0);
}

}  // namespace
}  // namespace cops
