#ifndef COPS_EVAL_STOCK_PHRASES_H_
#define COPS_EVAL_STOCK_PHRASES_H_

// Builds the list of phrases common in the language (core/stock_phrases.h) from background
// corpora: word n-grams, in the canonical form of core/canonicalizer.h and core/units.h,
// that many documents of several independent corpora use. eval/make_stock_phrases.py
// extracts the corpora from Debian packages and calls this through `cops-eval
// stock-phrases`.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace cops::eval {

struct StockPhraseOptions {
  uint32_t words = 4;           // n of the word n-grams
  uint32_t min_documents = 10;  // documents using a phrase, over all corpora
  uint32_t min_corpora = 3;     // corpora using it (one project's boilerplate is no idiom)
  uint32_t max_phrases = 20000; // the most used ones are kept
};

// Reads every regular file under each of `corpora` (folders; a file is one document, UTF-8
// text) and writes the phrases, most used first, one per line (words separated by one
// space), after a `#` header naming the options and the corpora's sizes.
absl::Status WriteStockPhrases(const std::vector<std::string>& corpora,
                               const StockPhraseOptions& options, std::ostream& out);

}  // namespace cops::eval

#endif  // COPS_EVAL_STOCK_PHRASES_H_
