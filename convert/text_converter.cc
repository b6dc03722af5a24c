// Plain text: charset detected (BOM, UTF-8 validity, uchardet) and decoded to UTF-8. Valid
// UTF-8 passes through unchanged with an identity offset map.

#include <cstring>

#include "absl/strings/str_cat.h"
#include "convert/charset.h"
#include "convert/formats.h"
#include "convert/text_builder.h"
#include "core/status_macros.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertText(std::string_view input,
                                              const ConvertContext& ctx) {
  if (std::memchr(input.data(), '\0', input.size()) != nullptr) {
    const std::string charset = DetectCharset(input);
    if (charset.rfind("UTF-16", 0) != 0 && charset.rfind("UTF-32", 0) != 0) {
      return absl::InvalidArgumentError(
          "text: input contains NUL bytes; it looks binary, not text (declare its format?)");
    }
  }
  ConvertedDocument doc;
  doc.format = DocumentFormat::kText;
  TextBuilder builder(ctx.limits.max_output_bytes);
  // The charset is detected by the decoding: UTF-8 is validated once.
  COPS_ASSIGN_OR_RETURN(doc.charset, DecodeToUtf8(input, "", 0, &builder));
  if (builder.overflowed()) return ctx.OutputTooLarge("text");
  // Plain text is passed through as decoded (no trimming) so the map stays the identity.
  builder.Finish(&doc, /*trim=*/false);
  return doc;
}

}  // namespace cops
