#ifndef COPS_SERVER_REPORT_PRIVACY_H_
#define COPS_SERVER_REPORT_PRIVACY_H_

// What a check report may tell its caller (docs/security.md, "Privacy in reports"): only
// documents of collections the caller may search, and about documents the caller does not own
// only the id, the title when the collection allows it, the ratios and the spans in the
// caller's own document - never registered text, registered offsets, owner or author.
//
// Thread-safety: a pure function of its arguments (the Authorizer must be thread-safe).

#include <cstdint>
#include <vector>

#include "core/match.h"
#include "server/authorizer.h"
#include "storage/index.h"

namespace cops {

// REQUIRES: records->size() == report->matches.size() and (*records)[i] is the registered
// document of report->matches[i].
//
// Drops the matches (and their records) whose collection is not in
// authorizer.UsableCollections(caller), then keeps the first `max_results` (0 = all; the report
// must have been decided without a limit so that another tenant's documents cannot crowd out
// the caller's), and recomputes report->violation. For each kept document the caller does not
// own (role admin owns all; otherwise record.owner == caller.name), clears owner, author and
// external id, the title unless PolicyFor(collection).show_titles_to_checkers, and the
// registered-side offsets of every span. Returns one CheckHit per kept match, to be passed to
// Authorizer::RecordCheck() once the reply is sent.
std::vector<CheckHit> RestrictReport(const Authorizer& authorizer, const Principal& caller,
                                     uint32_t max_results, Report* report,
                                     std::vector<DocumentRecord>* records);

}  // namespace cops

#endif  // COPS_SERVER_REPORT_PRIVACY_H_
