#include "convert/formats.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertMarkdown(std::string_view, const ConvertContext&) {
  return absl::UnimplementedError("markdown: converter not implemented yet");
}

}  // namespace cops
