#ifndef COPS_CLIENT_CHECK_REPORT_H_
#define COPS_CLIENT_CHECK_REPORT_H_

// How `cops check` shows a check reply: the pinned JSON object (issue 4; with a "path" for
// each document of a batch, issue 19; excluded passages as in docs/reports.md) and the
// terminal report.
//
// Thread-safety: stateless functions.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "proto/cops.pb.h"

namespace cops {

// "NOT_FOUND: cannot read x": a status as the command line prints it.
std::string StatusText(const absl::Status& status);

// The check reply as one line of JSON (no newline). With `path`, the object also carries
// "path": one line of `cops check --json PATH...`.
std::string CheckJsonLine(const v1::CheckDocumentReply& reply,
                          const std::optional<std::string>& path = std::nullopt);
// {"path": path, "error": StatusText(error)}: a batch document that could not be checked.
std::string ErrorJsonLine(const std::string& path, const absl::Status& error);

// The terminal report of one check: verdict, the excluded parts of the text, then each match
// with its passages quoted from `text` (the document as sent) with some context, the
// matched part in bold red when `tty` and between [[ ]] otherwise, each excluded passage
// marked "[excluded: <why>]", then the parameters with the exclusions.
void PrintCheckHuman(const v1::CheckDocumentReply& reply, const std::string& text, bool tty,
                     std::ostream& out);

// One line of a batch's terminal output: "VIOLATION  PATH  best 0.931 #12 "title"" (or
// "ok", or "ERROR  PATH: message"), no newline.
std::string BatchLine(const std::string& path, const absl::Status& error,
                      const v1::CheckDocumentReply* reply);

// The exclusions a check ran with, for people: "quotes, references, matches under 8 words,
// templates (cfp)", or "none".
std::string ExclusionsText(const v1::CheckParams& params);

// Why an excluded passage does not count, for people: "quoted", "in the references",
// "shared with a template", "shorter than the minimum match"; "" for EXCLUSION_NONE.
std::string ExclusionLabel(v1::Exclusion reason);

// Whether the match's shared passages passed the decision function (Match.chunk_violation; a
// reply from a server before that field said only "violation": then by chunks).
bool ChunkViolation(const v1::Match& match);

// Which decision made a match a violation, for people: "chunks" (its shared passages passed
// the decision function), "stem pairs" (its content-stem pairs did, docs/accuracy.md step
// 4), "chunks and stem pairs", or "" when it is no violation.
std::string DecidedByText(const v1::Match& match);

// "look-alike letters folded", "invisible characters removed", "hidden text found".
std::string ManipulationLabel(v1::ManipulationKind kind);
// "text manipulation suspected: look-alike letters folded (3, at 10-16 40-52); ..." or ""
// when the reply reports none.
std::string ManipulationText(const v1::CheckDocumentReply& reply);

// The passage text[start, end) with up to 40 bytes of context each side, marked as in
// PrintCheckHuman, on one line (newlines and tabs become spaces).
std::string Excerpt(const std::string& text, uint32_t start, uint32_t end, bool tty);

}  // namespace cops

#endif  // COPS_CLIENT_CHECK_REPORT_H_
