#ifndef COPS_TESTS_CONVERT_CONVERTED_TEXT_H_
#define COPS_TESTS_CONVERT_CONVERTED_TEXT_H_

// What a converter's marks cover, as text, for the converter tests of every format: one
// definition, so that the formats' hidden-text and image tests read alike.

#include <string>
#include <vector>

#include "convert/converter.h"

namespace cops::testing {

// The text of each hidden run (ConvertedDocument::hidden), in order.
inline std::vector<std::string> HiddenRuns(const ConvertedDocument& doc) {
  std::vector<std::string> out;
  for (const HiddenText& h : doc.hidden) {
    out.push_back(doc.text.substr(h.text_start, h.text_end - h.text_start));
  }
  return out;
}

// Each word with images inside it (ConvertedDocument::image_in_word) as "word:images".
inline std::vector<std::string> ImageWords(const ConvertedDocument& doc) {
  std::vector<std::string> out;
  for (const ImageInWord& w : doc.image_in_word) {
    out.push_back(doc.text.substr(w.text_start, w.text_end - w.text_start) + ":" +
                  std::to_string(w.images));
  }
  return out;
}

}  // namespace cops::testing

#endif  // COPS_TESTS_CONVERT_CONVERTED_TEXT_H_
