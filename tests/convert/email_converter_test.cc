#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convert/converter.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using testing::Base64;

constexpr char kHeaders[] =
    "From: Alice <alice@example.org>\r\nTo: bob@example.org\r\n"
    "Date: Mon, 1 Jan 2024 10:00:00 +0000\r\nMIME-Version: 1.0\r\n";

TEST(EmailConverterTest, SubjectAndQuotedPrintableLatin1Body) {
  const std::string mail = std::string(kHeaders) +
      "Subject: =?UTF-8?B?UsOpc3Vtw6k=?= of the talk\r\n"
      "Content-Type: text/plain; charset=iso-8859-1\r\n"
      "Content-Transfer-Encoding: quoted-printable\r\n\r\n"
      "The caf=E9 talk was a long one, soft line=\r\nbreaks included.\r\n";
  auto doc = Convert(mail, DocumentFormat::kEmail);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kEmail);
  EXPECT_EQ(doc->text,
            "R\xC3\xA9sum\xC3\xA9 of the talk\n\nThe caf\xC3\xA9 talk was a long one, soft "
            "linebreaks included.");
}

TEST(EmailConverterTest, AlternativePrefersPlainText) {
  const std::string mail = std::string(kHeaders) +
      "Subject: Alt\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n"
      "--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html <b>version</b></p>\r\n"
      "--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nplain version\r\n--b1--\r\n";
  auto doc = Convert(mail, DocumentFormat::kEmail);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Alt\n\nplain version");
}

TEST(EmailConverterTest, HtmlOnlyBodyIsConvertedFromBase64) {
  const std::string mail = std::string(kHeaders) +
      "Subject: Html only\r\nContent-Type: multipart/alternative; boundary=b2\r\n\r\n"
      "--b2\r\nContent-Type: text/html; charset=windows-1252\r\n"
      "Content-Transfer-Encoding: base64\r\n\r\n" +
      Base64("<html><body><p>Dear caf\xE9 owner,</p><script>x()</script><p>thanks.</p>"
             "</body></html>") +
      "--b2--\r\n";
  auto doc = Convert(mail, DocumentFormat::kEmail);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Html only\n\nDear caf\xC3\xA9 owner,\n\nthanks.");
}

// A message with a DOCX report, a text attachment and an image (not a document).
std::string MailWithAttachments() {
  const std::string docx = testing::MakeDocx({"Attached report body."});
  return std::string(kHeaders) +
         "Subject: Report\r\nContent-Type: multipart/mixed; boundary=\"mix\"\r\n\r\n"
         "--mix\r\nContent-Type: text/plain\r\n\r\nSee the attachments.\r\n"
         "--mix\r\nContent-Type: application/vnd.openxmlformats-officedocument."
         "wordprocessingml.document\r\nContent-Disposition: attachment; filename=\"report.docx\"\r\n"
         "Content-Transfer-Encoding: base64\r\n\r\n" +
         Base64(docx) +
         "--mix\r\nContent-Type: text/plain; charset=utf-8\r\n"
         "Content-Disposition: attachment; filename=notes.txt\r\n\r\nSome notes.\r\n"
         "--mix\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=a.png\r\n"
         "Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--mix--\r\n";
}

TEST(EmailConverterTest, DocumentAttachmentsAreConvertedAndReportedAsParts) {
  auto doc = Convert(MailWithAttachments(), DocumentFormat::kEmail);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Report\n\nSee the attachments.\n\nAttached report body.\n\nSome notes.");
  ASSERT_EQ(doc->parts.size(), 3u);
  EXPECT_EQ(doc->parts[1].name, "report.docx");
  EXPECT_EQ(doc->parts[1].format, DocumentFormat::kDocx);
  EXPECT_EQ(doc->text.substr(doc->parts[1].text_start,
                             doc->parts[1].text_end - doc->parts[1].text_start),
            "Attached report body.");
  EXPECT_EQ(doc->parts[2].name, "notes.txt");
}

TEST(EmailConverterTest, InProcessHandsOnlyBinaryAttachmentsToTheSandbox) {
  std::vector<DocumentFormat> sandboxed;
  uint32_t budget_given = 0;
  const SandboxConverter sandbox = [&](std::string_view input, DocumentFormat format,
                                       const ConvertLimits& limits, const ConvertOptions& options) {
    sandboxed.push_back(format);
    budget_given = limits.time_budget_ms;
    return ConvertInProcess(input, format, limits, options);
  };
  ConvertLimits limits;
  limits.time_budget_ms = 5000;
  auto doc = ConvertEmailInProcess(MailWithAttachments(), limits, {}, sandbox);
  ASSERT_OK(doc);
  // The same result as the whole message through the sandboxed Convert().
  auto whole = Convert(MailWithAttachments(), DocumentFormat::kEmail);
  ASSERT_OK(whole);
  EXPECT_EQ(doc->text, whole->text);
  ASSERT_EQ(doc->parts.size(), whole->parts.size());
  EXPECT_EQ(doc->parts[1].name, "report.docx");
  // The DOCX went to the sandbox with what was left of the budget; text stayed here.
  EXPECT_EQ(sandboxed, std::vector<DocumentFormat>{DocumentFormat::kDocx});
  EXPECT_GT(budget_given, 0u);
  EXPECT_LE(budget_given, 5000u);
}

TEST(EmailConverterTest, InProcessSandboxFailuresFailTheMessageOnlyWhenNotTheDocuments) {
  absl::Status answer;
  const SandboxConverter sandbox = [&](std::string_view, DocumentFormat, const ConvertLimits&,
                                       const ConvertOptions&) -> absl::StatusOr<ConvertedDocument> {
    return answer;
  };
  // A rejected (or parser-crashing) attachment is left out like a damaged one.
  answer = absl::InvalidArgumentError("docx: the converter died on this document");
  auto doc = ConvertEmailInProcess(MailWithAttachments(), {}, {}, sandbox);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Report\n\nSee the attachments.\n\nSome notes.");
  // No worker, or no time left: the message cannot be read whole.
  answer = absl::InternalError("docx: cannot find the cops-convert-worker executable");
  EXPECT_EQ(ConvertEmailInProcess(MailWithAttachments(), {}, {}, sandbox).status().code(),
            absl::StatusCode::kInternal);
  answer = absl::ResourceExhaustedError("docx: time budget exceeded");
  EXPECT_EQ(ConvertEmailInProcess(MailWithAttachments(), {}, {}, sandbox).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(EmailConverterTest, QuotedLinesAndSignatureDroppedOnRequest) {
  const std::string mail = std::string(kHeaders) +
      "Subject: Re: draft\r\nContent-Type: text/plain\r\n\r\n"
      "My answer is yes.\r\n> Original question\r\n>> older quote\r\nThanks.\r\n-- \r\n"
      "Alice, Example Org\r\n";
  auto all = Convert(mail, DocumentFormat::kEmail);
  ASSERT_OK(all);
  EXPECT_NE(all->text.find("Original question"), std::string::npos);
  EXPECT_NE(all->text.find("Example Org"), std::string::npos);

  ConvertOptions options;
  options.drop_quoted_lines = true;
  options.drop_signature = true;
  auto filtered = Convert(mail, DocumentFormat::kEmail, ConvertLimits{}, options);
  ASSERT_OK(filtered);
  EXPECT_EQ(filtered->text, "Re: draft\n\nMy answer is yes.\r\nThanks.");
}

TEST(EmailConverterTest, GarbageIsInvalidArgument) {
  auto doc = Convert("\x01\x02 no headers here at all", DocumentFormat::kEmail);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message().substr(0, 6), "email:");
}

TEST(EmailConverterTest, HugeHeaderIsHandled) {
  std::string mail = std::string(kHeaders) + "Subject: big\r\nX-Long: ";
  mail += std::string(2 << 20, 'x');
  mail += "\r\nContent-Type: text/plain\r\n\r\nbody after a huge header\r\n";
  auto doc = Convert(mail, DocumentFormat::kEmail);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "big\n\nbody after a huge header");
}

TEST(EmailConverterTest, DetectedByAuto) {
  auto doc = Convert(testing::MakeEmail({"Hello there", "Body paragraph."}),
                     DocumentFormat::kAuto);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kEmail);
  EXPECT_EQ(doc->text, "Hello there\n\nBody paragraph.");
}

}  // namespace
}  // namespace cops
