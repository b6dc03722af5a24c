#include "convert/formats.h"

namespace cops {

absl::StatusOr<ConvertedDocument> ConvertOffice(std::string_view, DocumentFormat format,
                                                const ConvertContext&) {
  return absl::UnimplementedError(std::string(DocumentFormatName(format)) +
                                  ": converter not implemented yet");
}

}  // namespace cops
