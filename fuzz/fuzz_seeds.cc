// cops-fuzz-seeds FORMAT DIR: writes a few real documents of FORMAT into DIR as the seed
// corpus for fuzz_FORMAT.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tests/testing/documents.h"

namespace t = cops::testing;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cops-fuzz-seeds FORMAT DIR\n";
    return 2;
  }
  const std::string format = argv[1];
  const bool all = format == "auto";  // every format's seeds
  const std::filesystem::path dir = argv[2];
  std::filesystem::create_directories(dir);
  std::vector<std::string> seeds;
  const std::vector<std::string> small = {"Title line", "A short paragraph of text.",
                                          "Caf\xC3\xA9 second\tparagraph."};
  const std::vector<std::string> prose = t::Prose(4, 3);
  for (const auto& paragraphs : {small, prose}) {
    if (all || format == "text") seeds.push_back(t::MakeText(paragraphs));
    if (all || format == "html") seeds.push_back(t::MakeHtml(paragraphs));
    if (all || format == "email") seeds.push_back(t::MakeEmail(paragraphs));
    if (all || format == "pdf") seeds.push_back(t::MakePdfFromParagraphs(paragraphs));
    if (all || format == "docx") seeds.push_back(t::MakeDocx(paragraphs));
    if (all || format == "odt") seeds.push_back(t::MakeOdt(paragraphs));
    if (all || format == "latex") seeds.push_back(t::MakeLatex(paragraphs));
    if (all || format == "markdown") seeds.push_back(t::MakeMarkdown(paragraphs));
  }
  if (all || format == "text") seeds.push_back("caf\xE9 \x93quoted\x94 windows-1252");
  if (all || format == "email") {
    seeds.push_back(
        "From: a@b\r\nSubject: s\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
        "boundary=x\r\n\r\n--x\r\nContent-Type: text/html; charset=iso-8859-1\r\n"
        "Content-Transfer-Encoding: quoted-printable\r\n\r\n<p>caf=E9</p>\r\n--x\r\n"
        "Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n" +
        t::Base64(t::MakePdf({{"attached"}})) + "--x--\r\n");
  }
  // DOCX and ODT: their XML parts alone too, NUL-separated, which fuzz/convert_fuzzer.cc
  // packs into an archive; with the constructs the converter treats specially.
  const std::string nul(1, '\0');
  const std::string w = "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"";
  if (format == "docx") {
    for (const auto& paragraphs : {small, prose}) seeds.push_back(t::DocxDocumentXml(paragraphs));
    seeds.push_back(
        "<?xml version=\"1.0\"?><!DOCTYPE w:document [<!ENTITY e \"entity text\">]><w:document " +
        w + "><w:body><w:p><w:r><w:t>one &e; &amp; &#x263A;</w:t><w:tab/><w:br/><w:cr/>"
        "<w:delText>deleted</w:delText><w:instrText>PAGE</w:instrText>"
        "<w:t><![CDATA[cdata <text>]]></w:t></w:r></w:p><w:p/></w:body></w:document>" + nul +
        "<w:footnotes " + w + "><w:footnote><w:p><w:r><w:t>a footnote</w:t></w:r></w:p>"
        "</w:footnote></w:footnotes>" + nul + "<w:endnotes " + w +
        "><w:endnote><w:p><w:r><w:t>an endnote</w:t></w:r></w:p></w:endnote></w:endnotes>");
  }
  if (format == "odt") {
    for (const auto& paragraphs : {small, prose}) seeds.push_back(t::OdtContentXml(paragraphs));
    seeds.push_back(
        "<?xml version=\"1.0\"?><office:document-content xmlns:office=\"urn:oasis:names:tc:"
        "opendocument:xmlns:office:1.0\" xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:"
        "text:1.0\"><office:body><office:text><text:h>Head</text:h><text:p>a<text:s text:c=\"3\"/>"
        "b<text:tab/>c<text:line-break/><text:span>d</text:span><office:annotation><text:p>"
        "note</text:p></office:annotation></text:p><text:tracked-changes><text:p>old</text:p>"
        "</text:tracked-changes><text:p/></office:text></office:body></office:document-content>" +
        nul + "<manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:"
        "manifest:1.0\"><manifest:file-entry manifest:full-path=\"content.xml\"/>"
        "</manifest:manifest>");
  }
  if (all || format == "pdf") {
    seeds.push_back(t::MakePdf({{"Header", "", "body one", "", "Page 1"},
                                {"Header", "", "body two", "", "Page 2"},
                                {"Header", "", "body thr-", "ee", "Page 3"}}));
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir / ("seed" + std::to_string(i)), std::ios::binary) << seeds[i];
  }
  return 0;
}
