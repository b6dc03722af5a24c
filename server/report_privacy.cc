#include "server/report_privacy.h"

#include <algorithm>
#include <map>
#include <string>

namespace cops {

std::vector<CheckHit> RestrictReport(const Authorizer& authorizer, const Principal& caller,
                                     uint32_t max_results, Report* report,
                                     std::vector<DocumentRecord>* records) {
  const std::optional<std::vector<std::string>> usable = authorizer.UsableCollections(caller);
  std::vector<DocumentMatch> kept_matches;
  std::vector<DocumentRecord> kept_records;
  for (size_t i = 0; i < report->matches.size(); ++i) {
    const DocumentRecord& r = (*records)[i];
    if (usable && std::find(usable->begin(), usable->end(), r.collection) == usable->end()) {
      continue;
    }
    if (max_results != 0 && kept_matches.size() >= max_results) break;
    kept_matches.push_back(std::move(report->matches[i]));
    kept_records.push_back(std::move((*records)[i]));
  }

  std::map<std::string, CollectionPolicy, std::less<>> policies;
  std::vector<CheckHit> hits;
  report->violation = false;
  for (size_t i = 0; i < kept_matches.size(); ++i) {
    DocumentMatch& m = kept_matches[i];
    DocumentRecord& r = kept_records[i];
    report->violation = report->violation || m.violation;
    hits.push_back(CheckHit{m.doc_id, r.collection, m.ratio, m.containment, m.matched_chunks,
                            m.violation});
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
  report->matches = std::move(kept_matches);
  *records = std::move(kept_records);
  return hits;
}

}  // namespace cops
