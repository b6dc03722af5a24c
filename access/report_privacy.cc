#include "access/report_privacy.h"

#include <map>
#include <string>
#include <utility>

namespace cops {

std::vector<AuditRecord> RedactReport(const Authorizer& authorizer, const Principal& caller,
                                      Report* report, std::vector<DocumentRecord>* records) {
  std::map<std::string, CollectionPolicy, std::less<>> policies;
  std::vector<AuditRecord> hits;
  hits.reserve(report->matches.size());
  for (size_t i = 0; i < report->matches.size(); ++i) {
    DocumentMatch& m = report->matches[i];
    DocumentRecord& r = (*records)[i];
    AuditRecord& hit = hits.emplace_back();
    hit.doc_id = m.doc_id;
    hit.collection = r.collection;
    hit.ratio = m.ratio;
    hit.containment = m.containment;
    hit.matched_chunks = m.matched_chunks;
    hit.violation = m.violation;
    hit.owner = r.owner;  // whose document it is, for the owner's match list
    const bool owns = caller.role == Role::kAdmin || (!r.owner.empty() && r.owner == caller.name);
    if (owns) continue;
    auto policy = policies.find(r.collection);
    if (policy == policies.end()) {
      policy = policies.emplace(r.collection, authorizer.PolicyFor(r.collection)).first;
    }
    // By allow-list: what a non-owner may see is copied into fresh values, so a field added
    // to DocumentRecord or Span later stays hidden until it is added here on purpose.
    DocumentRecord visible;
    visible.id = r.id;
    visible.collection = r.collection;
    if (policy->second.show_titles_to_checkers) visible.title = r.title;
    r = std::move(visible);
    for (Span& s : m.spans) {
      Span in_test;
      in_test.test_start = s.test_start;
      in_test.test_end = s.test_end;
      in_test.chunks = s.chunks;
      in_test.units = s.units;
      in_test.test_first_page = s.test_first_page;
      in_test.test_last_page = s.test_last_page;
      in_test.excluded = s.excluded;
      s = in_test;
    }
  }
  return hits;
}

}  // namespace cops
