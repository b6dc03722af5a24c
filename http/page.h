#ifndef COPS_HTTP_PAGE_H_
#define COPS_HTTP_PAGE_H_

// The web page of the HTTP API (docs/api.md, "The web page"): GET / and the script and style
// sheet it loads, kept as files in http/page/ and compiled in by http/CMakeLists.txt. The
// page is a client of the /v1 API like any other (it holds the API key in the tab's
// sessionStorage), so it needs nothing from the server but these files and the headers
// below: a Content-Security-Policy that allows only this origin's script, style and
// requests (no inline script or style, no other origin, no framing).
//
// Thread-safety: immutable data.

#include <span>
#include <string_view>
#include <utility>

namespace cops {

struct PageAsset {
  std::string_view path;          // "/", "/app.js", "/app.css"
  std::string_view content_type;  // with its charset
  std::string_view body;
};

// The page's files, "/" (index.html) first; the array lives as long as the program.
std::span<const PageAsset> PageAssets();

// The Content-Security-Policy of the page's responses.
inline constexpr std::string_view kPageContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

// The headers every response of the page carries.
inline constexpr std::pair<std::string_view, std::string_view> kPageHeaders[] = {
    {"Content-Security-Policy", kPageContentSecurityPolicy},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cache-Control", "no-cache"},
};

}  // namespace cops

#endif  // COPS_HTTP_PAGE_H_
