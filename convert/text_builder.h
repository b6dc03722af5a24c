#ifndef COPS_CONVERT_TEXT_BUILDER_H_
#define COPS_CONVERT_TEXT_BUILDER_H_

// Accumulates extracted UTF-8 text together with its offset map. Every converter builds its
// output through one: pieces appended with their original byte offset extend the current
// OffsetSegment when they continue it linearly (same page), otherwise start a new one.
//
// Thread-safety: none; one builder per conversion.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "convert/converter.h"

namespace cops {

class TextBuilder {
 public:
  // Text beyond max_bytes is dropped and overflowed() becomes true.
  explicit TextBuilder(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // Appends `utf8` that came from original bytes starting at `original_offset`.
  void Append(std::string_view utf8, uint32_t original_offset, uint32_t page = 0);
  // Appends text with no place of its own in the original (a separator); it is mapped to
  // wherever the previous piece ended.
  void AppendUnmapped(std::string_view utf8);
  // Appends `text`, collapsing runs of ASCII whitespace into one space and dropping
  // whitespace at the start of a line (HTML-like text). Each word keeps its own offset:
  // original_offset + its position in `text`, passed through map->OriginalOffset() when
  // `map` is given (text that was itself decoded from the original).
  void AppendCollapsed(std::string_view text, uint32_t original_offset, uint32_t page = 0,
                       const ConvertedDocument* map = nullptr);
  // Ends the current line ("\n"), trimming trailing spaces; no-op on an empty line.
  void LineBreak();
  // Ends the current paragraph: text then ends with exactly one blank line. No-op when the
  // text is empty or already ends a paragraph.
  void ParagraphBreak();

  // Marks text()[begin, size()) as hidden from a reader (ConvertedDocument::hidden); a run
  // touching the previous one extends it, runs marked before within it join it.
  void MarkHidden(uint32_t begin);
  // Notes an image at the end of the text so far. Finish() reports it in
  // ConvertedDocument::image_in_word when the text on both sides of it, as finally built,
  // is a letter or digit (nothing, not even a space or a line break, came in between).
  void MarkImage();

  bool overflowed() const { return overflowed_; }
  const std::string& text() const { return text_; }
  size_t size() const { return text_.size(); }

  // Trims trailing whitespace (unless !trim) and moves text and segments into `doc`.
  void Finish(ConvertedDocument* doc, bool trim = true);

 private:
  void TrimTrailingSpaces();
  void MapTo(uint32_t original_offset, uint32_t page);

  uint64_t max_bytes_;
  bool overflowed_ = false;
  std::string text_;
  std::vector<OffsetSegment> segments_;
  std::vector<HiddenText> hidden_;
  std::vector<uint32_t> images_;  // text offsets of MarkImage() calls, ascending
};

}  // namespace cops

#endif  // COPS_CONVERT_TEXT_BUILDER_H_
