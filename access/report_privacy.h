#ifndef COPS_ACCESS_REPORT_PRIVACY_H_
#define COPS_ACCESS_REPORT_PRIVACY_H_

// What a check report may tell its caller about documents it does not own (docs/security.md,
// "Privacy in reports"): the id, the title when the collection allows it, the ratios and the
// spans in the caller's own document - never registered text, registered offsets, owner or
// author. Which collections a check searches is decided before detection (service.cc
// CheckCollections), so a report never holds another tenant's documents to begin with.
//
// Thread-safety: a pure function of its arguments (the Authorizer must be thread-safe).

#include <cstdint>
#include <vector>

#include "access/audit_sink.h"
#include "access/authorizer.h"
#include "core/match.h"
#include "storage/index.h"

namespace cops {

// REQUIRES: records->size() == report->matches.size() and (*records)[i] is the registered
// document of report->matches[i]; the report is final (the detection pipeline has searched only
// the caller's usable collections, ordered, cut at max_results and set the violation flag).
//
// For each match whose document the caller does not own (role admin owns all; otherwise
// record.owner == caller.name), keeps of its record only the id, the collection and the title
// (when PolicyFor(collection).show_titles_to_checkers), and of each span only the test
// document's side (offsets, pages, chunks, units, exclusion): an allow-list, so owner,
// author, external id, the registered side, digests, sizes and any field added later are
// cleared.
// Matches, ratios and the violation flag are left as they are. Returns one audit record per
// match, naming the document's owner but without checker, time (AuditSink::Record sets them)
// and test digest, for the handler to record those whose collection keeps audits once the
// reply is filled.
std::vector<AuditRecord> RedactReport(const Authorizer& authorizer, const Principal& caller,
                                     Report* report, std::vector<DocumentRecord>* records);

}  // namespace cops

#endif  // COPS_ACCESS_REPORT_PRIVACY_H_
