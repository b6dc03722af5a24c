#ifndef COPS_CLIENT_CLI_OPTIONS_H_
#define COPS_CLIENT_CLI_OPTIONS_H_

// Rules every option of the `cops` command line follows, applied to the whole CLI11 tree
// once it is built, so that a new option cannot forget them.
//
// A repeatable option (one that collects a list, e.g. `check --collection`) takes exactly one
// value per occurrence: CLI11 lets a list option swallow every following word, so
// `cops check --collection su a.txt b.txt` searched the collections su, a.txt and b.txt and
// checked nothing. Now a.txt and b.txt are the paths; repeat the option for more values
// (`--collection su --collection acm`).
//
// Thread-safety: call before parsing, from one thread.

#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
}

namespace cops {

// Applies the rule above to `app` and all its subcommands.
void OneValuePerOccurrence(CLI::App* app);

// For an option whose words go to the server as text (a title, a collection, an owner's name):
// refuses bytes that are not UTF-8 ("--title: not valid UTF-8", exit 2), which a request
// cannot carry (protobuf strings are UTF-8). File paths are bytes and take no such check.
CLI::Validator Utf8Text();

// The repeatable options of `app` and its subcommands, each as the words that reach it:
// {"check", "--collection"}, {"admin", "principal", "create", "--collection"}, ...
std::vector<std::vector<std::string>> RepeatableOptions(const CLI::App& app);

// Makes no option or argument of `app` required, so that a dry run shows what any words
// became. (The caller keeps subcommand callbacks from doing anything: `cops` points the
// admin commands at no server.)
void PrepareDryRun(CLI::App* app);

// What a parse gave, as JSON: {"command": ["check"], "options": {"--collection": ["su"],
// "paths": ["a.txt", "b.txt"]}, "repeatable": [...]} for the deepest parsed subcommand
// (the options given on it), with RepeatableOptions(app). `cops` prints it instead of running
// when COPS_CLI_DRY_RUN is set, after PrepareDryRun (tests/client/cli_options_test.cc).
std::string ParsedCommandJson(const CLI::App& app);

}  // namespace cops

#endif  // COPS_CLIENT_CLI_OPTIONS_H_
