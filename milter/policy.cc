#include "milter/policy.h"

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

using nlohmann::json;

absl::Status Bad(std::string_view key, std::string_view what) {
  return absl::InvalidArgumentError(std::string("milter config: \"") + std::string(key) + "\" " +
                                    std::string(what));
}

// Reads a value of type T, or INVALID_ARGUMENT naming the key and the type wanted.
template <typename T>
absl::StatusOr<T> Get(const json& value, std::string_view key, std::string_view type) {
  try {
    return value.get<T>();
  } catch (const json::exception&) {
    return Bad(key, std::string("must be ") + std::string(type));
  }
}

// The keys a "domains" entry shares with the top level: sets the rule `key` names (action,
// threshold or collections) and returns true, or returns false for any other key. `field`
// names the key in errors.
template <typename Action, typename Collections>
absl::StatusOr<bool> ApplyRuleKey(const std::string& key, const json& value,
                                  std::string_view field, Action* action,
                                  std::optional<double>* threshold, Collections* collections) {
  if (key == "action") {
    COPS_ASSIGN_OR_RETURN(std::string name, Get<std::string>(value, field, "a string"));
    COPS_ASSIGN_OR_RETURN(*action, ParseMilterAction(name));
  } else if (key == "threshold") {
    COPS_ASSIGN_OR_RETURN(*threshold, Get<double>(value, field, "a number"));
  } else if (key == "collections") {
    COPS_ASSIGN_OR_RETURN(*collections,
                          Get<std::vector<std::string>>(value, field, "a list of strings"));
  } else {
    return false;
  }
  return true;
}

// "domains": {"DOMAIN": {"action": .., "threshold": .., "collections": [..]}, ...}.
absl::StatusOr<std::map<std::string, DomainPolicy>> ParseDomains(const json& value) {
  if (!value.is_object()) return Bad("domains", "must be an object of domain policies");
  std::map<std::string, DomainPolicy> out;
  for (const auto& [name, entry] : value.items()) {
    const std::string where = absl::StrCat("domains\": \"", name);
    if (!entry.is_object()) return Bad(where, "must be an object");
    DomainPolicy& d = out[AsciiLower(name)];
    for (const auto& [key, v] : entry.items()) {
      const std::string field = absl::StrCat(where, "\": \"", key);
      COPS_ASSIGN_OR_RETURN(const bool known,
                            ApplyRuleKey(key, v, field, &d.action, &d.threshold, &d.collections));
      if (!known) return Bad(field, "is not a known key (action, threshold, collections)");
    }
  }
  return out;
}

}  // namespace

std::string RecipientDomain(std::string_view address) {
  if (!address.empty() && address.front() == '<') address.remove_prefix(1);
  if (!address.empty() && address.back() == '>') address.remove_suffix(1);
  const size_t at = address.rfind('@');
  if (at == std::string_view::npos) return "";
  std::string domain = AsciiLower(address.substr(at + 1));
  while (!domain.empty() && domain.back() == '.') domain.pop_back();  // a root-anchored name
  return domain;
}

std::string_view MilterActionName(MilterAction action) {
  switch (action) {
    case MilterAction::kHeaders:
      return "headers";
    case MilterAction::kQuarantine:
      return "quarantine";
    case MilterAction::kReject:
      return "reject";
  }
  return "?";
}

absl::StatusOr<MilterAction> ParseMilterAction(std::string_view name) {
  for (MilterAction a :
       {MilterAction::kHeaders, MilterAction::kQuarantine, MilterAction::kReject}) {
    if (name == MilterActionName(a)) return a;
  }
  return absl::InvalidArgumentError("unknown action '" + std::string(name) +
                                    "' (headers, quarantine, reject)");
}

std::string_view FailureActionName(FailureAction action) {
  switch (action) {
    case FailureAction::kAccept:
      return "accept";
    case FailureAction::kTempfail:
      return "tempfail";
    case FailureAction::kReject:
      return "reject";
  }
  return "?";
}

absl::StatusOr<FailureAction> ParseFailureAction(std::string_view name) {
  for (FailureAction a :
       {FailureAction::kAccept, FailureAction::kTempfail, FailureAction::kReject}) {
    if (name == FailureActionName(a)) return a;
  }
  return absl::InvalidArgumentError("unknown on_failure '" + std::string(name) +
                                    "' (accept, tempfail, reject)");
}

CheckRules MilterPolicy::Defaults() const {
  CheckRules rules;
  rules.action = action;
  rules.threshold = threshold;
  rules.collections = collections;
  return rules;
}

std::vector<CheckRules> MilterPolicy::RulesFor(const std::vector<std::string>& recipients) const {
  if (domains.empty()) return {Defaults()};
  std::set<std::string> keys;  // the entries that apply, in key order
  bool defaults = recipients.empty();
  for (const std::string& recipient : recipients) {
    if (const std::string* key = DomainKeyFor(RecipientDomain(recipient)); key != nullptr) {
      keys.insert(*key);
    } else {
      defaults = true;
    }
  }
  std::vector<CheckRules> out;
  if (defaults) out.push_back(Defaults());
  for (const std::string& key : keys) {
    const DomainPolicy& domain = domains.at(key);
    CheckRules rules = Defaults();
    rules.domain = key;
    if (domain.action.has_value()) rules.action = *domain.action;
    if (domain.threshold.has_value()) rules.threshold = domain.threshold;
    if (domain.collections.has_value()) rules.collections = *domain.collections;
    out.push_back(std::move(rules));
  }
  return out;
}

const std::string* MilterPolicy::DomainKeyFor(std::string_view domain) const {
  if (domain.empty()) return nullptr;
  if (auto it = domains.find(std::string(domain)); it != domains.end()) return &it->first;
  // The longest ".suffix" key: strip one label at a time.
  for (size_t dot = domain.find('.'); dot != std::string_view::npos;
       dot = domain.find('.', dot + 1)) {
    if (auto it = domains.find(std::string(domain.substr(dot))); it != domains.end()) {
      return &it->first;
    }
  }
  return nullptr;
}

MilterAction MilterPolicy::ActionFor(const CheckRules& rules,
                                     const std::string& collection) const {
  auto it = collection_actions.find(collection);
  return it == collection_actions.end() ? rules.action : it->second;
}

absl::Status MilterPolicy::Validate() const {
  if (threshold.has_value() && !(*threshold > 0 && *threshold <= 1)) {
    return Bad("threshold", "must be in (0, 1]");
  }
  if (timeout_ms == 0) return Bad("timeout_ms", "must be at least 1");
  if (reject_code.size() != 3 || reject_code[0] != '5' ||
      reject_code.find_first_not_of("0123456789") != std::string::npos) {
    return Bad("reject_code", "must be a 5xx SMTP reply code");
  }
  if (!reject_status.starts_with("5.")) return Bad("reject_status", "must be a 5.x.y status");
  if (reject_text.find_first_of("\r\n") != std::string::npos) {
    return Bad("reject_text", "must be one line");
  }
  if (max_parts == 0) return Bad("max_parts", "must be at least 1");
  if (convert_workers == 0) return Bad("convert_workers", "must be at least 1");
  for (const auto& [name, domain] : domains) {
    if (name.empty() || name == ".") return Bad("domains", "has an empty domain");
    if (domain.threshold.has_value() && !(*domain.threshold > 0 && *domain.threshold <= 1)) {
      return Bad("domains", "\"" + name + "\": threshold must be in (0, 1]");
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyPolicyJson(std::string_view text, MilterPolicy* policy) {
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return absl::InvalidArgumentError("milter config: not a JSON object");
  MilterPolicy p = *policy;
  for (const auto& [key, value] : root.items()) {
    COPS_ASSIGN_OR_RETURN(const bool rule,
                          ApplyRuleKey(key, value, key, &p.action, &p.threshold, &p.collections));
    if (rule) continue;
    if (key == "collection_actions") {
      COPS_ASSIGN_OR_RETURN(auto actions, (Get<std::map<std::string, std::string>>(
                                              value, key, "an object of action names")));
      p.collection_actions.clear();
      for (const auto& [collection, name] : actions) {
        COPS_ASSIGN_OR_RETURN(p.collection_actions[collection], ParseMilterAction(name));
      }
    } else if (key == "timeout_ms") {
      COPS_ASSIGN_OR_RETURN(p.timeout_ms, Get<uint32_t>(value, key, "a number"));
    } else if (key == "on_failure") {
      COPS_ASSIGN_OR_RETURN(std::string name, Get<std::string>(value, key, "a string"));
      COPS_ASSIGN_OR_RETURN(p.on_failure, ParseFailureAction(name));
    } else if (key == "reject_code") {
      COPS_ASSIGN_OR_RETURN(p.reject_code, Get<std::string>(value, key, "a string"));
    } else if (key == "reject_status") {
      COPS_ASSIGN_OR_RETURN(p.reject_status, Get<std::string>(value, key, "a string"));
    } else if (key == "reject_text") {
      COPS_ASSIGN_OR_RETURN(p.reject_text, Get<std::string>(value, key, "a string"));
    } else if (key == "quarantine_reason") {
      COPS_ASSIGN_OR_RETURN(p.quarantine_reason, Get<std::string>(value, key, "a string"));
    } else if (key == "max_message_bytes") {
      COPS_ASSIGN_OR_RETURN(p.max_message_bytes, Get<uint64_t>(value, key, "a number"));
    } else if (key == "max_parts") {
      COPS_ASSIGN_OR_RETURN(p.max_parts, Get<uint32_t>(value, key, "a number"));
    } else if (key == "domains") {
      COPS_ASSIGN_OR_RETURN(p.domains, ParseDomains(value));
    } else if (key == "convert_workers") {
      COPS_ASSIGN_OR_RETURN(p.convert_workers, Get<uint32_t>(value, key, "a number"));
    } else if (key == "convert_in_process") {
      COPS_ASSIGN_OR_RETURN(p.convert_in_process, Get<bool>(value, key, "true or false"));
    } else if (key == "max_matches_header") {
      COPS_ASSIGN_OR_RETURN(p.max_matches_header, Get<uint32_t>(value, key, "a number"));
    } else if (key == "stats_interval_s") {
      COPS_ASSIGN_OR_RETURN(p.stats_interval_s, Get<uint32_t>(value, key, "a number"));
    } else {
      return Bad(key, "is not a known key");
    }
  }
  COPS_RETURN_IF_ERROR(p.Validate());
  *policy = std::move(p);
  return absl::OkStatus();
}

absl::Status ApplyPolicyFile(const std::string& path, MilterPolicy* policy) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("milter config: cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return ApplyPolicyJson(buf.str(), policy);
}

}  // namespace cops
