#include "client/cli_options.h"

#include "CLI/CLI.hpp"
#include "convert/charset.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

// A named (not positional) option that collects a list.
bool IsRepeatable(const CLI::Option& option) {
  return !option.get_positional() && option.get_items_expected_max() > 1;
}

void CollectRepeatable(const CLI::App& app, const std::vector<std::string>& path,
                       std::vector<std::vector<std::string>>* out) {
  for (const CLI::Option* option : app.get_options()) {
    if (!IsRepeatable(*option)) continue;
    std::vector<std::string> words = path;
    words.push_back(option->get_name());
    out->push_back(std::move(words));
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    CollectRepeatable(*sub, sub_path, out);
  }
}

}  // namespace

void OneValuePerOccurrence(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (IsRepeatable(*option)) option->allow_extra_args(false);
  }
  for (CLI::App* sub : app->get_subcommands({})) OneValuePerOccurrence(sub);
}

void PrepareDryRun(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) option->required(false);
  for (CLI::App* sub : app->get_subcommands({})) PrepareDryRun(sub);
}

std::vector<std::vector<std::string>> RepeatableOptions(const CLI::App& app) {
  std::vector<std::vector<std::string>> out;
  CollectRepeatable(app, {}, &out);
  return out;
}

std::string ParsedCommandJson(const CLI::App& app) {
  const CLI::App* deepest = &app;
  nlohmann::json command = nlohmann::json::array();
  for (bool descended = true; descended;) {
    descended = false;
    for (const CLI::App* sub : deepest->get_subcommands({})) {
      if (sub->parsed()) {
        deepest = sub;
        command.push_back(sub->get_name());
        descended = true;
        break;
      }
    }
  }
  nlohmann::json options = nlohmann::json::object();
  for (const CLI::Option* option : deepest->get_options()) {
    if (option->count() > 0) options[option->get_name()] = option->results();
  }
  nlohmann::json repeatable = RepeatableOptions(app);
  return nlohmann::json{{"command", command}, {"options", options}, {"repeatable", repeatable}}
             .dump() +
         "\n";
}

CLI::Validator Utf8Text() {
  return CLI::Validator(
      [](const std::string& value) {
        return IsValidUtf8(value) ? std::string() : std::string("not valid UTF-8");
      },
      "", "UTF-8 text");
}

}  // namespace cops
