#include "convert/formats.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertLatex(std::string_view, const ConvertContext&) {
  return absl::UnimplementedError("latex: converter not implemented yet");
}

}  // namespace cops
