#include "convert/formats.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertHtml(std::string_view, const ConvertContext&) {
  return absl::UnimplementedError("html: converter not implemented yet");
}

}  // namespace cops
