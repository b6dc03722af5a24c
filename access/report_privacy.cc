#include "access/report_privacy.h"

#include <map>
#include <string>

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
    if (!policy->second.show_titles_to_checkers) r.title.clear();
    r.owner.clear();
    r.author.clear();
    r.external_id.clear();
    for (Span& s : m.spans) {
      s.has_registered = false;
      s.registered_start = 0;
      s.registered_end = 0;
    }
  }
  return hits;
}

}  // namespace cops
