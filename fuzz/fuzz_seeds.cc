// cops-fuzz-seeds FORMAT DIR: writes a few real documents of FORMAT into DIR as the seed
// corpus for fuzz_FORMAT. Besides the document formats: "storage_codec", "access_records",
// "receipt" and "service", values their encoders wrote, each behind the selector byte its
// fuzz target reads first (fuzz/*_fuzzer.cc).

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/receipt.h"
#include "proto/cops.pb.h"
#include "storage/access_records.h"
#include "storage/bucket_codec.h"
#include "storage/codec.h"
#include "tests/testing/documents.h"

namespace t = cops::testing;

namespace {

std::string Tagged(char selector, const std::string& value) { return selector + value; }

// fuzz/storage_codec_fuzzer.cc: 0 posting list, 1 merge, 2 document record, 3 grams,
// 5 postings bucket, 6 bucket merge.
std::vector<std::string> StorageCodecSeeds() {
  namespace codec = cops::storage_codec;
  std::vector<std::string> seeds;
  cops::PostingList list;
  list.doc_frequency = 3;
  list.postings = {{1, 0, 0, 40}, {1, 1, 30, 75}, {4, 0, 10, 20}, {9, 2, 5, 6}};
  const std::string encoded = codec::EncodePostingList(list);
  seeds.push_back(Tagged(0, encoded));
  const std::vector<cops::Posting> added = {{12, 0, 0, 9}, {12, 3, 7, 30}};
  const std::string add = codec::EncodeAddOperand(12, added);
  const std::string remove = codec::EncodeRemoveOperand(4);
  // Merge input: a flags byte (bit 0: an existing value), then length-prefixed pieces.
  auto piece = [](const std::string& v) { return std::string(1, static_cast<char>(v.size())) + v; };
  seeds.push_back(Tagged(1, std::string(1, '\x01') + piece(encoded) + piece(add) + piece(remove)));
  seeds.push_back(Tagged(1, std::string(1, '\x04') + piece(add) + piece(add)));
  cops::DocumentRecord r;
  r.title = "A title";
  r.author = "An author";
  r.owner = "owner";
  r.collection = "a";
  r.external_id = "ext-1";
  r.format = "text";
  r.registered_unix_micros = 1700000000000000;
  r.sha256[0] = 0xab;
  r.total_chunks = 40;
  r.stored_chunks = 12;
  r.size_bytes = 4096;
  seeds.push_back(Tagged(2, codec::EncodeDocumentRecord(r)));
  r.expires_unix_micros = 1800000000000000;
  r.not_before_unix_micros = 1750000000000000;
  seeds.push_back(Tagged(2, codec::EncodeDocumentRecord(r)));
  const std::vector<uint32_t> grams = {1, 2, 65535, 300};
  seeds.push_back(Tagged(3, codec::EncodeGrams(grams)));
  namespace bc = cops::bucket_codec;
  const std::vector<bc::BucketPosting> bucket = {
      {3, {5, 2, 100, 130}}, {3, {5, 9, 90, 95}}, {3, {7, 0, 0, 10}}, {900, {6, 1, 40, 60}}};
  const std::string fragment = bc::EncodeAddFragment(bucket);
  seeds.push_back(Tagged(5, fragment));
  const std::vector<uint64_t> rests = {3, 900};
  const std::string bucket_remove = bc::EncodeRemoveOperand(5, rests);
  const std::string other = bc::EncodeAddFragment(std::vector<bc::BucketPosting>{{4, {8, 0, 1, 9}}});
  seeds.push_back(Tagged(6, std::string(1, '\x01') + piece(fragment) + piece(other) +
                                piece(bucket_remove)));
  seeds.push_back(Tagged(6, std::string(1, '\x04') + piece(fragment) + piece(other)));
  // Tag 3 (schema 6): document 11 without positions beside one with them.
  const std::string positionless = bc::EncodeAddFragment(
      std::vector<bc::BucketPosting>{{3, {8, 4, 20, 30}}, {3, {11, 0, 0, 0}}, {9, {11, 0, 0, 0}}});
  seeds.push_back(Tagged(5, positionless));
  seeds.push_back(Tagged(6, std::string(1, '\x02') + piece(fragment) + piece(positionless) +
                                piece(bucket_remove)));
  return seeds;
}

// fuzz/access_records_fuzzer.cc: 0 principal, 1 key, 2 collection, 3 audit, 4 usage.
std::vector<std::string> AccessRecordSeeds() {
  namespace records = cops::access_records;
  cops::PrincipalRecord p;
  p.name = "owner";
  p.role = 1;
  p.collections = {"a", "b"};
  p.created_unix_micros = 1700000000000000;
  p.requests_per_second = 2.5;
  p.burst = 10;
  p.max_documents = 1000;
  p.max_bytes = 1 << 20;
  cops::ApiKeyRecord k;
  k.key_id = "00000000000000ff";
  k.principal = "owner";
  k.salt = std::string(16, '\x11');
  k.hash = std::string(32, '\x22');
  k.created_unix_micros = 1700000000000000;
  cops::CollectionRecord c;
  c.name = "a";
  c.keep_audit = true;
  c.retention_seconds = 86400;
  cops::AuditRecord a;
  a.doc_id = 7;
  a.collection = "a";
  a.unix_micros = 1700000000000000;
  a.checker = "checker";
  a.ratio = 0.25;
  a.containment = 0.5;
  a.matched_chunks = 12;
  a.violation = true;
  a.owner = "owner";
  a.test_sha256 = std::string(64, 'e');
  cops::UsageRecord u{12, 40960};
  return {Tagged(0, records::EncodePrincipal(p)), Tagged(1, records::EncodeKey(k)),
          Tagged(2, records::EncodeCollection(c)), Tagged(3, records::EncodeAudit(a)),
          Tagged(4, records::EncodeUsage(u))};
}

// fuzz/receipt_fuzzer.cc: 0 payload, 1 receipt file, 2 key id/signature/payload, 3 PEM.
std::vector<std::string> ReceiptSeeds() {
  cops::ReceiptFields f;
  f.doc_id = 7;
  f.content_sha256 = std::string(64, 'a');
  f.text_sha256 = std::string(64, 'b');
  f.size_bytes = 4096;
  f.format = "text";
  f.chunking = "k=8";
  f.hash_key_id = "0123456789abcdef";
  f.owner = "owner";
  f.collection = "a";
  f.external_id = "caf\xC3\xA9 \"quoted\"";
  f.registered_unix_micros = 1700000000000000;
  std::vector<std::string> seeds;
  auto key = cops::SigningKey::Generate();
  if (!key.ok()) return seeds;
  auto receipt = cops::SignReceipt(*key, f);
  if (!receipt.ok()) return seeds;
  seeds.push_back(Tagged(0, receipt->payload));
  seeds.push_back(Tagged(1, cops::EncodeReceiptFile(*receipt)));
  seeds.push_back(Tagged(2, receipt->key_id + '\0' + receipt->signature + '\0' + receipt->payload));
  seeds.push_back(Tagged(3, "# key_id " + key->verifying_key().id() + "\n" +
                                key->verifying_key().ToPem()));
  seeds.push_back(Tagged(3, key->ToPem()));
  return seeds;
}

// fuzz/service_fuzzer.cc: the selector's low 4 bits pick the RPC, bits 4-5 the caller.
std::vector<std::string> ServiceSeeds() {
  namespace v1 = cops::v1;
  std::vector<std::string> seeds;
  auto add = [&](int rpc, const google::protobuf::MessageLite& m) {
    for (int caller = 0; caller < 3; ++caller) {
      seeds.push_back(Tagged(static_cast<char>(rpc | caller << 4), m.SerializeAsString()));
    }
  };
  const std::string text = t::MakeText(t::Prose(3, 2));
  v1::RegisterDocumentRequest reg;
  reg.mutable_document()->set_content(text);
  reg.mutable_document()->set_format(v1::DOCUMENT_FORMAT_TEXT);
  reg.mutable_document()->mutable_metadata()->set_title("A title");
  reg.mutable_document()->mutable_metadata()->set_collection("a");
  reg.mutable_document()->mutable_metadata()->set_external_id("ext-1");
  add(0, reg);
  v1::UnregisterDocumentRequest unreg;
  unreg.set_doc_id(1);
  add(1, unreg);
  v1::GetDocumentRequest get;
  get.set_doc_id(1);
  get.set_include_content(true);
  add(2, get);
  v1::ListDocumentsRequest list;
  list.set_page_size(10);
  list.set_collection("a");
  add(3, list);
  v1::CheckDocumentRequest check;
  check.set_content(text);
  check.mutable_options()->set_min_count(1);
  check.mutable_options()->set_min_passage_units(1);
  check.add_collections("a");
  add(4, check);
  add(5, v1::GetStatsRequest());
  v1::ListMatchesRequest matches;
  add(6, matches);
  add(7, reg);
  add(8, check);
  return seeds;
}

// fuzz/http_fuzzer.cc: whole requests, "$KEY" standing for an owner's API key.
std::vector<std::string> HttpSeeds() {
  const std::string text = t::MakeText(t::Prose(3, 2));
  const std::string auth = "Authorization: Bearer $KEY\r\n";
  auto request = [&](const std::string& head, const std::string& type, const std::string& body) {
    std::string r = head + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth;
    if (!type.empty()) r += "Content-Type: " + type + "\r\n";
    if (!body.empty() || head.rfind("POST", 0) == 0 || head.rfind("PUT", 0) == 0) {
      r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    return r + "\r\n" + body;
  };
  const std::string multipart =
      "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.txt\"\r\n"
      "Content-Type: text/plain\r\n\r\n" +
      text +
      "\r\n--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nPaper\r\n"
      "--b\r\nContent-Disposition: form-data; name=\"collection\"\r\n\r\na\r\n--b--\r\n";
  const std::string batch =
      "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"1.txt\"\r\n\r\n" + text +
      "\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"2.md\"\r\n\r\n# T\r\n" +
      text + "\r\n--b--\r\n";
  return {
      request("GET /healthz", "", ""),
      request("GET /v1/session", "", ""),
      request("GET /v1/openapi.json", "", ""),
      request("POST /v1/documents?title=A%20paper&collection=a&external_id=x1&receipt=false",
              "text/plain", text),
      request("POST /v1/documents", "multipart/form-data; boundary=b", multipart),
      request("POST /v1/documents", "application/json",
              R"({"content":"A text of a few words to register here.","title":"T",)"
              R"("collection":"a","format":"text","expires_unix_seconds":4102444800})"),
      request("GET /v1/documents?collection=a&page_size=2&page_token=x", "", ""),
      request("GET /v1/documents/1", "", ""),
      request("GET /v1/documents/1/content", "", ""),
      request("DELETE /v1/documents/1", "", ""),
      request("POST /v1/checks?collection=a&min_passage_units=1&want_spans=true&format=text",
              "text/plain", text),
      request("POST /v1/checks?html=true", "application/x-www-form-urlencoded",
              "content=" + std::string("some+words+to+check%2C+caf%C3%A9") +
                  "&threshold=0.05&exclude_quotes=true"),
      request("POST /v1/checks", "application/json",
              R"({"content":"words","collections":["a"],"function":"ratio","threshold":0.1,)"
              R"("sample_size":3,"sample_seed":7,"heavy_revisions":false})"),
      request("POST /v1/jobs?collection=a", "text/plain", text),
      request("POST /v1/jobs", "multipart/form-data; boundary=b", batch),
      request("GET /v1/jobs/job_00112233445566778899aabbccddeeff", "", ""),
      request("GET /v1/jobs/job_0/deliveries", "", ""),
      request("POST /v1/jobs/job_0/deliveries:resend", "application/json", "{}"),
      request("PUT /v1/webhook", "application/json", R"({"url":"https://example.com/hook"})"),
      request("GET /v1/webhook", "", ""),
      request("DELETE /v1/webhook", "", ""),
      request("GET /v1/matches?since_unix_seconds=0&page_size=5", "", ""),
      "POST /v1/checks HTTP/1.1\r\nHost: h\r\n" + auth +
          "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      "POST /v1/documents HTTP/1.1\r\nHost: h\r\n" + auth +
          "Idempotency-Key: k1\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
      "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /app.js HTTP/1.1\r\nHost: h\r\n\r\n",
  };
}

}  // namespace

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
  if (format == "storage_codec") seeds = StorageCodecSeeds();
  if (format == "access_records") seeds = AccessRecordSeeds();
  if (format == "receipt") seeds = ReceiptSeeds();
  if (format == "service") seeds = ServiceSeeds();
  if (format == "http") seeds = HttpSeeds();
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
  // Images inside and beside words (ConvertedDocument::image_in_word).
  if (all || format == "html") {
    seeds.push_back("<p>Pay<img src=p.png>al P<b><img src=a.png></b>y<svg><text>x</text></svg>"
                    "al <img src=x.png> logo caf<img>\xC3\xA9<br>end<img> <span hidden>"
                    "a<img>b</span></p>");
  }
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
        "<w:t><![CDATA[cdata <text>]]></w:t></w:r></w:p><w:p/>"
        "<w:p><w:r><w:t>Pay</w:t></w:r><w:r><w:drawing><wp:inline/></w:drawing></w:r><w:r>"
        "<mc:AlternateContent><mc:Choice><w:drawing><wp:inline/></w:drawing></mc:Choice>"
        "<mc:Fallback><w:pict/></mc:Fallback></mc:AlternateContent></w:r><w:r><w:t>al</w:t>"
        "</w:r><w:r><w:object/></w:r></w:p></w:body></w:document>" + nul +
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
        "</text:tracked-changes><text:p/><text:p>Pay<draw:frame text:anchor-type=\"as-char\">"
        "<draw:image/><draw:image/></draw:frame>al<draw:image/>s</text:p></office:text>"
        "</office:body></office:document-content>" +
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
