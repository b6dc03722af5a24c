#include "convert/document_codec.h"
#include "tests/testing/status_matchers.h"

#include <gtest/gtest.h>

namespace cops {
namespace {

TEST(DocumentCodecTest, DocumentRoundTrips) {
  ConvertedDocument doc;
  doc.format = DocumentFormat::kEmail;
  doc.text = std::string("text with \0 nul", 15);
  doc.charset = "UTF-8";
  doc.segments = {{0, 5, 1}, {7, 90, 2}};
  doc.parts = {{"a.pdf", DocumentFormat::kPdf, 0, 7}};
  doc.hidden = {{5, 9}};
  doc.image_in_word = {{0, 4, 2}, {10, 14, 1}};
  auto back = DecodeResponse(EncodeResponse(doc));
  ASSERT_OK(back);
  EXPECT_EQ(back->format, doc.format);
  EXPECT_EQ(back->text, doc.text);
  EXPECT_EQ(back->charset, doc.charset);
  ASSERT_EQ(back->segments.size(), 2u);
  EXPECT_EQ(back->segments[1].original_offset, 90u);
  EXPECT_EQ(back->segments[1].page, 2u);
  ASSERT_EQ(back->parts.size(), 1u);
  EXPECT_EQ(back->parts[0].name, "a.pdf");
  EXPECT_EQ(back->parts[0].text_end, 7u);
  ASSERT_EQ(back->hidden.size(), 1u);  // the sandboxed worker's hidden text reaches copsd
  EXPECT_EQ(back->hidden[0].text_start, 5u);
  EXPECT_EQ(back->hidden[0].text_end, 9u);
  ASSERT_EQ(back->image_in_word.size(), 2u);  // and so do the images found inside words
  EXPECT_EQ(back->image_in_word[0].text_end, 4u);
  EXPECT_EQ(back->image_in_word[0].images, 2u);
  EXPECT_EQ(back->image_in_word[1].text_start, 10u);
  EXPECT_EQ(back->image_in_word[1].text_end, 14u);
  EXPECT_EQ(back->image_in_word[1].images, 1u);
}

TEST(DocumentCodecTest, ErrorsRoundTripWithCodeAndMessage) {
  auto back = DecodeResponse(EncodeResponse(absl::InvalidArgumentError("pdf: encrypted")));
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(back.status().message(), "pdf: encrypted");
}

TEST(DocumentCodecTest, TruncatedResponsesAreInternalErrors) {
  ConvertedDocument doc;
  doc.text = "some text";
  doc.segments = {{0, 0, 0}};
  doc.image_in_word = {{0, 4, 1}};
  const std::string bytes = EncodeResponse(doc);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto back = DecodeResponse(std::string_view(bytes).substr(0, cut));
    ASSERT_FALSE(back.ok()) << cut;
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInternal);
  }
}

TEST(DocumentCodecTest, ImageWordsOutsideTheTextAreMalformed) {
  // A damaged or hostile worker's ranges must not index past the text copsd reports from.
  ConvertedDocument doc;
  doc.text = "some text";
  for (const ImageInWord& bad : {ImageInWord{5, 10, 1}, ImageInWord{4, 2, 1}}) {
    doc.image_in_word = {bad};
    auto back = DecodeResponse(EncodeResponse(doc));
    ASSERT_FALSE(back.ok()) << bad.text_start << "-" << bad.text_end;
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInternal);
  }
}

TEST(DocumentCodecTest, RequestCarriesLimitsOptionsAndInput) {
  ConvertLimits limits;
  limits.time_budget_ms = 1234;
  limits.max_zip_entries = 7;
  ConvertOptions options;
  options.drop_signature = true;
  options.find_hidden_text = false;
  const std::string bytes =
      EncodeRequestHeader(DocumentFormat::kOdt, limits, options) + "document bytes";
  auto req = DecodeRequest(bytes);
  ASSERT_OK(req);
  EXPECT_EQ(req->format, DocumentFormat::kOdt);
  EXPECT_EQ(req->limits.time_budget_ms, 1234u);
  EXPECT_EQ(req->limits.max_zip_entries, 7u);
  EXPECT_TRUE(req->limits.in_process);
  EXPECT_TRUE(req->options.drop_signature);
  EXPECT_FALSE(req->options.drop_quoted_lines);
  EXPECT_FALSE(req->options.find_hidden_text);
  EXPECT_EQ(req->input, "document bytes");
  auto defaults = DecodeRequest(EncodeRequestHeader(DocumentFormat::kPdf, limits, {}));
  ASSERT_OK(defaults);
  EXPECT_TRUE(defaults->options.find_hidden_text);
  EXPECT_FALSE(DecodeRequest("GARBAGE!").ok());
}

}  // namespace
}  // namespace cops
