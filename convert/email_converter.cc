#include "convert/formats.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertEmail(std::string_view, const ConvertContext&) {
  return absl::UnimplementedError("email: converter not implemented yet");
}

}  // namespace cops
