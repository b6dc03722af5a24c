#include "convert/text_builder.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>

namespace cops {
namespace {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Whether the code point of `text` ending right before byte `at` (before) or starting at it
// (!before) belongs in a word: a letter, a decimal digit, or a combining mark (a decomposed
// accent); its byte length in *len. Invalid UTF-8 does not. `at` <= text.size() <= INT32_MAX.
bool WordCharAt(const std::string& text, int32_t at, bool before, int32_t* len) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  UChar32 c;
  int32_t i = at;
  if (before) {
    if (i <= 0) return false;
    U8_PREV(s, 0, i, c);
    *len = at - i;
  } else {
    if (i >= n) return false;
    U8_NEXT(s, i, n, c);
    *len = i - at;
  }
  return c >= 0 && (U_GET_GC_MASK(c) & (U_GC_L_MASK | U_GC_M_MASK | U_GC_ND_MASK)) != 0;
}

}  // namespace

void TextBuilder::MapTo(uint32_t original_offset, uint32_t page) {
  const uint32_t here = static_cast<uint32_t>(text_.size());
  // Segments that started in text since trimmed away would break the sort order.
  while (!segments_.empty() && segments_.back().text_offset > here) segments_.pop_back();
  if (!segments_.empty()) {
    const OffsetSegment& last = segments_.back();
    if (last.page == page && original_offset >= last.original_offset &&
        original_offset - last.original_offset == here - last.text_offset) {
      return;  // continues the current segment linearly
    }
    if (last.text_offset == here) {  // previous segment is empty: replace it
      segments_.back() = {here, original_offset, page};
      return;
    }
  }
  segments_.push_back({here, original_offset, page});
}

void TextBuilder::Append(std::string_view utf8, uint32_t original_offset, uint32_t page) {
  if (utf8.empty() || overflowed_) return;
  if (text_.size() + utf8.size() > max_bytes_) {
    overflowed_ = true;
    return;
  }
  MapTo(original_offset, page);
  text_.append(utf8);
}

void TextBuilder::AppendUnmapped(std::string_view utf8) {
  if (utf8.empty() || overflowed_) return;
  if (text_.size() + utf8.size() > max_bytes_) {
    overflowed_ = true;
    return;
  }
  text_.append(utf8);
}

void TextBuilder::AppendCollapsed(std::string_view text, uint32_t original_offset,
                                  uint32_t page, const ConvertedDocument* map) {
  size_t i = 0;
  while (i < text.size()) {
    if (IsAsciiSpace(text[i])) {
      while (i < text.size() && IsAsciiSpace(text[i])) ++i;
      if (!text_.empty() && text_.back() != ' ' && text_.back() != '\n') {
        AppendUnmapped(" ");
      }
      continue;
    }
    size_t j = i;
    while (j < text.size() && !IsAsciiSpace(text[j])) ++j;
    const uint32_t at = original_offset + static_cast<uint32_t>(i);
    Append(text.substr(i, j - i), map == nullptr ? at : map->OriginalOffset(at), page);
    i = j;
  }
}

void TextBuilder::TrimTrailingSpaces() {
  while (!text_.empty() && (text_.back() == ' ' || text_.back() == '\t')) text_.pop_back();
  // An image after the trimmed spaces had a space before it: it was not inside a word, and
  // its offset would otherwise point into whatever text comes next.
  while (!images_.empty() && images_.back() > text_.size()) images_.pop_back();
}

void TextBuilder::LineBreak() {
  TrimTrailingSpaces();
  if (text_.empty() || text_.back() == '\n') return;
  AppendUnmapped("\n");
}

void TextBuilder::ParagraphBreak() {
  TrimTrailingSpaces();
  if (text_.empty()) return;
  if (text_.size() >= 2 && text_.compare(text_.size() - 2, 2, "\n\n") == 0) return;
  AppendUnmapped(text_.back() == '\n' ? "\n" : "\n\n");
}

void TextBuilder::MarkHidden(uint32_t begin) {
  const uint32_t end = static_cast<uint32_t>(text_.size());
  // Separators appended before the hidden text are not hidden.
  while (begin < end && IsAsciiSpace(text_[begin])) ++begin;
  if (begin >= end) return;
  // Runs inside this one (hidden words of a paragraph hidden as a whole) become part of it.
  while (!hidden_.empty() && hidden_.back().text_start >= begin) hidden_.pop_back();
  // Runs apart by spaces only are one run.
  if (!hidden_.empty() &&
      std::all_of(text_.begin() + std::min(hidden_.back().text_end, begin),
                  text_.begin() + begin, IsAsciiSpace)) {
    hidden_.back().text_end = std::max(hidden_.back().text_end, end);
  } else {
    hidden_.push_back({begin, end});
  }
}

void TextBuilder::MarkImage() {
  if (overflowed_ || text_.size() > INT32_MAX) return;
  images_.push_back(static_cast<uint32_t>(text_.size()));
}

void TextBuilder::Finish(ConvertedDocument* doc, bool trim) {
  while (trim && !text_.empty() && IsAsciiSpace(text_.back())) text_.pop_back();
  const uint32_t size = static_cast<uint32_t>(text_.size());
  while (!segments_.empty() && segments_.back().text_offset >= size) segments_.pop_back();
  if (size == 0) segments_.clear();
  while (!hidden_.empty() && hidden_.back().text_start >= size) hidden_.pop_back();
  if (!hidden_.empty()) hidden_.back().text_end = std::min(hidden_.back().text_end, size);
  doc->image_in_word.clear();
  for (const uint32_t at : images_) {  // ascending
    if (size > INT32_MAX || at >= size) break;
    const int32_t pos = static_cast<int32_t>(at);
    int32_t len = 0;
    if (!WordCharAt(text_, pos, true, &len) || !WordCharAt(text_, pos, false, &len)) continue;
    if (!doc->image_in_word.empty() && at < doc->image_in_word.back().text_end) {
      ++doc->image_in_word.back().images;  // another image in the same word
      continue;
    }
    // The whole word around the image, as a reader of the report should find it; found
    // once per word, so many images in one long word cost one walk over it.
    int32_t start = pos, end = pos;
    while (WordCharAt(text_, start, true, &len)) start -= len;
    while (WordCharAt(text_, end, false, &len)) end += len;
    doc->image_in_word.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(end), 1});
  }
  doc->text = std::move(text_);
  doc->segments = std::move(segments_);
  doc->hidden = std::move(hidden_);
  text_.clear();
  segments_.clear();
  hidden_.clear();
  images_.clear();
}

}  // namespace cops
