#include "convert/formats.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertPdf(std::string_view, const ConvertContext&) {
  return absl::UnimplementedError("pdf: converter not implemented yet");
}

}  // namespace cops
