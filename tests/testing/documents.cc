#include "tests/testing/documents.h"

#include <zip.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>

namespace cops::testing {
namespace {

// Starts a PdfPage entry that holds operators, not a line (no text starts with a control byte).
constexpr std::string_view kOperatorsMark = "\x01";

// UTF-8 -> PDF literal string in WinAnsi (Latin-1 subset), escaped.
std::string PdfString(const std::string& utf8) {
  std::string out = "(";
  for (size_t i = 0; i < utf8.size(); ++i) {
    unsigned char c = utf8[i];
    unsigned code = c;
    if (c >= 0xC0 && c < 0xE0 && i + 1 < utf8.size()) {
      code = ((c & 0x1F) << 6) | (static_cast<unsigned char>(utf8[i + 1]) & 0x3F);
      ++i;
    }
    if (code == '(' || code == ')' || code == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(code));
    } else if (code >= 0x80 && code <= 0xFF) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", code);
      out += buf;
    } else if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    }
  }
  return out + ")";
}

}  // namespace

std::string PdfOperators(const std::string& operators) {
  return std::string(kOperatorsMark) + operators;
}

std::string MakePdf(const std::vector<PdfPage>& pages, bool encrypt) {
  std::vector<std::string> objects;  // object i+1
  const size_t n = pages.size();
  std::string kids;
  for (size_t i = 0; i < n; ++i) kids += std::to_string(4 + 2 * i) + " 0 R ";
  objects.push_back("<< /Type /Catalog /Pages 2 0 R >>");
  objects.push_back("<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(n) + " >>");
  objects.push_back(
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  for (size_t i = 0; i < n; ++i) {
    std::string content = "BT /F1 11 Tf 14 TL 72 760 Td\n";
    for (const std::string& line : pages[i]) {
      if (line.starts_with(kOperatorsMark)) {
        content += line.substr(kOperatorsMark.size()) + "\n";
        continue;
      }
      if (!line.empty()) content += PdfString(line) + " Tj ";
      content += "T*\n";
    }
    content += "ET\n";
    objects.push_back("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << "
                      "/Font << /F1 3 0 R >> >> /Contents " +
                      std::to_string(5 + 2 * i) + " 0 R >>");
    objects.push_back("<< /Length " + std::to_string(content.size()) + " >>\nstream\n" +
                      content + "endstream");
  }
  if (encrypt) {
    objects.push_back(
        "<< /Filter /Standard /V 1 /R 2 /P -44 "
        "/O <0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef> "
        "/U <fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210> >>");
  }
  std::string pdf = "%PDF-1.4\n%\xE2\xE3\xCF\xD3\n";
  std::vector<size_t> offsets;
  for (size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(pdf.size());
    pdf += std::to_string(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
  }
  const size_t xref = pdf.size();
  pdf += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%010zu 00000 n \n", off);
    pdf += buf;
  }
  pdf += "trailer\n<< /Size " + std::to_string(objects.size() + 1) + " /Root 1 0 R";
  if (encrypt) {
    pdf += " /Encrypt " + std::to_string(objects.size()) +
           " 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>]";
  }
  pdf += " >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
  return pdf;
}

PdfPage WrapLines(const std::vector<std::string>& paragraphs, size_t width) {
  PdfPage lines;
  for (const std::string& p : paragraphs) {
    std::string line;
    size_t pos = 0;
    while (pos < p.size()) {
      size_t end = p.find(' ', pos);
      if (end == std::string::npos) end = p.size();
      std::string word = p.substr(pos, end - pos);
      pos = end + 1;
      if (!line.empty() && line.size() + 1 + word.size() > width) {
        lines.push_back(line);
        line.clear();
      }
      if (!line.empty()) line += ' ';
      line += word;
    }
    if (!line.empty()) lines.push_back(line);
    lines.emplace_back();  // gap between paragraphs
  }
  return lines;
}

std::string MakePdfFromParagraphs(const std::vector<std::string>& paragraphs) {
  const PdfPage lines = WrapLines(paragraphs);
  std::vector<PdfPage> pages;
  for (size_t i = 0; i < lines.size(); i += 45) {
    pages.emplace_back(lines.begin() + i, lines.begin() + std::min(lines.size(), i + 45));
  }
  return MakePdf(pages);
}

std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& entries,
                    bool deflate) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_t* zip = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  zip_source_keep(buffer);
  for (const auto& [name, content] : entries) {
    zip_source_t* src = zip_source_buffer(zip, content.data(), content.size(), 0);
    const zip_int64_t index = zip_file_add(zip, name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (!deflate && index >= 0) zip_set_file_compression(zip, index, ZIP_CM_STORE, 0);
  }
  zip_close(zip);
  std::string out;
  zip_stat_t st;
  if (zip_source_stat(buffer, &st) == 0 && zip_source_open(buffer) == 0) {
    out.resize(st.size);
    zip_source_read(buffer, out.data(), st.size);
    zip_source_close(buffer);
  }
  zip_source_free(buffer);
  zip_error_fini(&error);
  return out;
}

std::string DocxDocumentXml(const std::vector<std::string>& paragraphs) {
  std::string body;
  for (const std::string& p : paragraphs) {
    body += "<w:p><w:pPr><w:pStyle w:val=\"Normal\"/></w:pPr>";
    size_t pos = 0;
    while (pos <= p.size()) {
      size_t tab = p.find('\t', pos);
      std::string run = p.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos);
      // Split each run in two <w:r> to exercise run joining.
      size_t half = run.size() / 2;
      body += "<w:r><w:rPr><w:b/></w:rPr><w:t xml:space=\"preserve\">" + run.substr(0, half) +
              "</w:t></w:r><w:r><w:t>" + run.substr(half) + "</w:t></w:r>";
      if (tab == std::string::npos) break;
      body += "<w:r><w:tab/></w:r>";
      pos = tab + 1;
    }
    body += "</w:p>";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
         "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
         "<w:body>" + body + "<w:sectPr/></w:body></w:document>";
}

std::string MakeDocx(const std::vector<std::string>& paragraphs) {
  return MakeZip({
      {"[Content_Types].xml",
       "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/"
       "content-types\"><Override PartName=\"/word/document.xml\" ContentType=\"application/"
       "vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/></Types>"},
      {"_rels/.rels",
       "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/"
       "2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/"
       "officeDocument/2006/relationships/officeDocument\" Target=\"word/document.xml\"/>"
       "</Relationships>"},
      {"word/document.xml", DocxDocumentXml(paragraphs)},
  });
}

std::string OdtContentXml(const std::vector<std::string>& paragraphs) {
  std::string body;
  bool first = true;
  for (const std::string& p : paragraphs) {
    std::string text;
    for (char c : p) text += c == '\t' ? std::string("<text:tab/>") : std::string(1, c);
    if (first) {
      body += "<text:h text:outline-level=\"1\">" + text + "</text:h>";
      first = false;
    } else {
      size_t half = text.find(' ');
      if (half == std::string::npos) half = 0;
      body += "<text:p text:style-name=\"P1\"><text:span text:style-name=\"T1\">" +
              text.substr(0, half) + "</text:span>" + text.substr(half) + "</text:p>";
    }
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
         "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" office:version=\"1.2\">"
         "<office:body><office:text>" + body + "</office:text></office:body></office:document-content>";
}

std::string MakeOdt(const std::vector<std::string>& paragraphs) {
  return MakeZip({
      {"mimetype", "application/vnd.oasis.opendocument.text"},
      {"META-INF/manifest.xml",
       "<?xml version=\"1.0\"?><manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:"
       "opendocument:xmlns:manifest:1.0\"><manifest:file-entry manifest:full-path=\"/\" "
       "manifest:media-type=\"application/vnd.oasis.opendocument.text\"/><manifest:file-entry "
       "manifest:full-path=\"content.xml\" manifest:media-type=\"text/xml\"/></manifest:manifest>"},
      {"content.xml", OdtContentXml(paragraphs)},
  });
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t line = 0;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[v & 63] : '=');
    if ((line += 4) >= 76) {
      out += "\r\n";
      line = 0;
    }
  }
  return out + "\r\n";
}

std::string MakeHtml(const std::vector<std::string>& paragraphs) {
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Fixture</title>"
      "<style>p { margin: 0 }</style><script>var x = '<p>not text</p>';</script></head>\n<body>\n";
  bool first = true;
  for (const std::string& p : paragraphs) {
    html += first ? "<h1>" + p + "</h1>\n" : "<p>" + p + "</p>\n";
    first = false;
  }
  return html + "<!-- a comment --></body></html>\n";
}

std::string MakeText(const std::vector<std::string>& paragraphs) {
  std::string out;
  for (const std::string& p : paragraphs) out += p + "\n\n";
  return out;
}

std::string MakeLatex(const std::vector<std::string>& paragraphs) {
  std::string out =
      "\\documentclass{article}\n\\usepackage{amsmath}\n\\title{Ignored preamble}\n"
      "\\begin{document}\n";
  bool first = true;
  for (const std::string& p : paragraphs) {
    out += first ? "\\section{" + p + "}\\label{sec:first}\n\n" : p + " % a comment\n\n";
    first = false;
  }
  return out + "\\end{document}\n";
}

std::string MakeMarkdown(const std::vector<std::string>& paragraphs) {
  std::string out;
  bool first = true;
  for (const std::string& p : paragraphs) {
    if (first) {
      out += "# " + p + "\n\n";
    } else {
      // Bold the first word, as writers do.
      const size_t space = p.find(' ');
      out += space == std::string::npos ? p + "\n\n"
                                         : "**" + p.substr(0, space) + "**" + p.substr(space) +
                                               "\n\n";
    }
    first = false;
  }
  return out;
}

std::string MakeEmail(const std::vector<std::string>& paragraphs) {
  std::string out =
      "From: Alice <alice@example.org>\r\nTo: bob@example.org\r\nSubject: " +
      (paragraphs.empty() ? std::string("empty") : paragraphs[0]) +
      "\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
      "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n";
  std::string body;
  for (size_t i = 1; i < paragraphs.size(); ++i) body += paragraphs[i] + "\n\n";
  return out + Base64(body);
}

std::vector<std::string> Prose(size_t n, uint32_t seed) {
  static const char* kWords[] = {
      "the", "committee", "received", "several", "papers", "whose", "text", "overlapped",
      "with", "earlier", "submissions", "and", "a", "careful", "reader", "noticed", "that",
      "entire", "paragraphs", "had", "been", "copied", "without", "attribution", "from",
      "journals", "conference", "proceedings", "technical", "reports", "while", "others",
      "were", "only", "lightly", "paraphrased", "registration", "server", "detects",
      "copies", "by", "comparing", "hashed", "chunks", "of", "documents", "in", "its", "index"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t p = 0; p < n; ++p) {
    std::string para;
    const size_t sentences = 3 + rng() % 4;
    for (size_t s = 0; s < sentences; ++s) {
      const size_t words = 8 + rng() % 12;
      for (size_t w = 0; w < words; ++w) {
        std::string word = kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
        if (w == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
        if (!para.empty()) para += ' ';
        para += word;
      }
      para += '.';
    }
    out.push_back(para);
  }
  return out;
}

const HeavyRewrite kDripIrrigation = {
    .source =
        "Drip irrigation delivers water directly to plant roots through a network of narrow "
        "tubes and small emitters. Because the water never sprays into the air, evaporation "
        "losses stay low and leaves remain dry, which reduces fungal disease. Gardeners usually "
        "run the system early in the morning, when soil temperature is low and wind is calm. A "
        "pressure regulator keeps the flow steady, and a fine mesh filter stops sand from "
        "clogging the emitters. Each spring the lines should be flushed, the emitters checked "
        "for mineral deposits, and damaged tubing replaced before the growing season begins.",
    .rewrite =
        "With drip irrigation, water goes straight to the plant roots by way of narrow tubes "
        "ending in small emitters. Since nothing is sprayed through the air, evaporation losses "
        "are kept low; dry leaves mean less fungal disease. Most gardeners start their system in "
        "the early morning while soil temperature stays low and the wind is calm. Steady flow "
        "comes from a pressure regulator, while sand that could clog emitters is caught by a "
        "fine mesh filter. Every spring, flush the lines, check emitters for mineral deposits "
        "and replace any damaged tubing before a new growing season.",
    .same_subject =
        "Sprinklers are the cheapest way to water a lawn. An oscillating head covers a "
        "rectangle, while a rotary head throws a jet in a circle. Set the timer for dawn so the "
        "grass dries before noon, and move the sprinkler every few days to avoid puddles. Garden "
        "hoses left in the sun crack quickly, so coil them in the shade after use, and drain "
        "them before frost.",
    .reworded =
        "Drip irrigation brings water to the roots of each plant by way of narrow tubes with "
        "small emitters on them. No water is thrown into the air, so evaporation losses stay "
        "low, the foliage stays dry and fungal disease is rarer. Most growers run the system "
        "at dawn, while the soil is cool and the wind is calm. Flow is kept steady by a "
        "pressure regulator, and grit is caught by a fine mesh filter before it can block "
        "anything. Every spring, flush the lines and look at each emitter for mineral "
        "deposits, and damaged tubing should go before the new season begins.",
};

}  // namespace cops::testing
