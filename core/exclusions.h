#ifndef COPS_CORE_EXCLUSIONS_H_
#define COPS_CORE_EXCLUSIONS_H_

// Exclusions: parts of a test document that never count against it, as editors expect of a
// similarity report (quoted passages, the bibliography, very short matches, text shared
// with a template such as a call for papers). This file finds the parts of a text to
// exclude; the detection pipeline (core/detect.h) applies them: a matched passage inside
// one is reported with its reason but counts for nothing, and ratios are computed on the
// text that is not excluded.
//
// The finders read the text as it is fingerprinted (UTF-8, the converter's output), not the
// canonical text, which keeps no punctuation: offsets are bytes of that text, the byte
// space of DocumentFingerprint's chunk and unit spans before any mapping.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/fingerprint.h"

namespace cops {

// Why a part of the test text does not count.
// on-wire: values equal cops.v1.Exclusion (proto/cops.proto); do not change.
enum class Exclusion : uint8_t {
  kNone = 0,        // counts
  kQuote = 1,       // between quotation marks, or a block quote
  kReferences = 2,  // the bibliography / references section
  kTemplate = 3,    // shared with a document of a template collection
  kShortMatch = 4,  // a matched passage shorter than CheckOptions::min_match_units
  // A verified passage made only of the registered corpus's common text (CheckOptions::
  // common_phrase_documents): boilerplate, not copying.
  kCommonPhrase = 5,
};

// "quote", "references", "template", "short_match", "common_phrase"; "" for kNone.
std::string_view ExclusionName(Exclusion e);

// Bytes [start, end) of a text, excluded for `reason`.
struct ExcludedRange {
  uint32_t start = 0;
  uint32_t end = 0;
  Exclusion reason = Exclusion::kNone;

  bool operator==(const ExcludedRange&) const = default;
};

// Which text exclusions a check asks for (templates and short matches are applied by the
// pipeline, not found in the text).
struct TextExclusions {
  bool quotes = false;
  bool references = false;
};

// Quoted passages, each from its opening mark to its closing mark inclusive:
//   - "..." (ASCII: a mark after a space or an opening bracket, before a non-space, opens;
//     a mark after a non-space closes), “...”, „...“ and „...”, «...», »...«, 「...」, 『...』.
//     Quotes may nest (an inner pair lies inside its outer one). A quote still open at a
//     blank line (paragraph break) or 8 KiB after its mark is unbalanced and excludes
//     nothing; an ASCII opening mark met while another ASCII quote is open and cannot close
//     makes the older one unbalanced. Single quotes ('...', ‘...’) are not quotes here:
//     they are apostrophes too often.
//   - Block quotes: each line whose first character other than a space or tab is '>'
//     (e-mail and Markdown quoting), the line without its line break.
// Sorted by start; nested quotes are merged into their outer one.
std::vector<ExcludedRange> FindQuotes(std::string_view text);

// The block-quote lines of FindQuotes() alone ('>' first on the line). For a Markdown
// source, whose converter removes the markers: the caller reads the original bytes.
std::vector<ExcludedRange> FindBlockQuoteLines(std::string_view text);

// The <blockquote> elements of an HTML source, from the start of the opening tag to the
// end of the matching closing tag (nesting counted, tag names in any case); an element not
// closed runs to the end. For the original bytes of an HTML document.
std::vector<ExcludedRange> FindHtmlBlockQuotes(std::string_view html);

// The references section: from a heading line to the end of the text. A heading line is a
// line of at most 80 bytes that, without surrounding spaces, Markdown '#' marks, section
// numbering ("7", "7.", "VII.", "A.") and a final ':' or '.', reads (in any case) as one of
// the usual names: References, Bibliography, Works Cited, Literature Cited, Literatur,
// Literaturverzeichnis, Bibliographie, Références, Bibliografía, Referencias, Riferimenti
// bibliografici, ... (the full list is in exclusions.cc). LaTeX heading commands count too:
// "\section*{References}", "\chapter{Bibliography}". The last such heading is taken (a table
// of contents may name the section earlier). A LaTeX thebibliography environment in the text
// (a .tex file checked as plain text: the LaTeX converter drops it already) is a references
// section from "\begin{thebibliography}" to its "\end{thebibliography}" (or the end).
// std::nullopt when there is none.
std::optional<ExcludedRange> FindReferences(std::string_view text);

// FindQuotes() and FindReferences() as `which` asks, normalized (NormalizeRanges()).
std::vector<ExcludedRange> FindExclusions(std::string_view text, const TextExclusions& which);

// Sorts `ranges` by start and makes them disjoint: overlapping or touching ranges of the same
// reason merge; where ranges of different reasons overlap, the one starting first keeps the
// overlap. Empty ranges are dropped.
void NormalizeRanges(std::vector<ExcludedRange>* ranges);

// For each unit, the reason of the range its bytes overlap (kNone when none): out->at(i)
// describes units[i]. REQUIRES: `ranges` normalized.
void ExcludedUnits(std::span<const UnitSpan> units, std::span<const ExcludedRange> ranges,
                   std::vector<Exclusion>* out);

}  // namespace cops

#endif  // COPS_CORE_EXCLUSIONS_H_
