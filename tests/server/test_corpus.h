#ifndef COPS_TESTS_SERVER_TEST_CORPUS_H_
#define COPS_TESTS_SERVER_TEST_CORPUS_H_

// A small corpus of real prose (written for these tests) shared by the server and client
// tests, and the derived test documents: an exact copy, one paragraph inside new text, an
// edited copy with words changed in every sentence, and unrelated text.

#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace cops::testing_corpus {

struct Text {
  const char* title;
  const char* owner;
  const char* collection;
  const char* body;
};

inline const std::vector<Text>& Corpus() {
  static const std::vector<Text> corpus = {
      {"The keeper of the northern light", "harbour-press", "essays",
       "The lighthouse on the northern cape was built in the winter of a hard year, when the "
       "fishing fleet had lost three boats on the reef in as many months. Its keeper lived in a "
       "narrow cottage at the foot of the tower and climbed the spiral stair four times every "
       "night to trim the wick and polish the great lens.\n\n"
       "Visitors rarely came, and the supply boat could only land when the swell dropped below "
       "the height of a man. On calm mornings the keeper rowed out to the rocks to gather "
       "mussels, and in the long evenings he wrote letters to a sister who lived inland and had "
       "never seen the sea.\n\n"
       "When the light was finally automated, the cottage stood empty for a decade. A group of "
       "volunteers restored it with salvaged timber, and today schoolchildren sleep in the old "
       "bunk room and listen to the foghorn recordings that the last keeper left behind.\n"},
      {"Bread that rises slowly", "kitchen-notes", "essays",
       "A sourdough starter is nothing more than flour and water left long enough for wild "
       "yeasts and lactic bacteria to settle in. Feeding it every day keeps the culture lively, "
       "and after a week or two it will double in size within a few hours of each meal.\n\n"
       "The dough itself needs patience rather than effort. Mixing the flour with water and "
       "letting it rest before the salt goes in allows the gluten to form on its own, so that "
       "a few gentle folds during the first rise do the work that kneading once did.\n\n"
       "Shaping is where most beginners struggle, because a slack dough spreads across the "
       "counter like a puddle. Building tension on the surface with a bench scraper, and then "
       "letting the loaf proof overnight in a cold refrigerator, gives a crust that crackles "
       "and an open crumb full of glossy holes.\n"},
      {"Giving the river back its bends", "water-board", "reports",
       "For most of the last century the river was treated as a drainage channel. Engineers "
       "straightened its course, lined the banks with concrete, and removed the fallen trees "
       "that slowed the current, so that the water would leave the farmland as quickly as "
       "possible after heavy rain.\n\n"
       "The result was faster floods downstream and a riverbed scoured down to bare gravel. "
       "Salmon stopped spawning in the upper reaches, and the towns at the mouth of the valley "
       "spent more each decade on higher walls and stronger pumps.\n\n"
       "Restoration began with a single meander cut back into a meadow that the council had "
       "bought from a retiring farmer. Within three seasons the slower water had laid down "
       "new shoals, kingfishers nested in the soft banks, and the flood peak measured at the "
       "bridge below had dropped by a noticeable margin.\n"},
      {"Messages along the wire", "archive-society", "reports",
       "Before the telegraph, news travelled exactly as fast as a rider or a ship could carry "
       "it. Merchants in port cities paid boys to watch the horizon for sails, and a price "
       "quoted in one market might be days out of date by the time it reached another.\n\n"
       "The first lines were strung along railway cuttings, because the companies already "
       "owned the land and needed a way to tell stations that a train had left. Operators "
       "learned to read the clicking of the sounder by ear, and the best of them could take "
       "down forty words a minute without looking at the tape.\n\n"
       "Within a generation, cables crossed the ocean floor and a message could circle the "
       "globe in an afternoon. Newspapers printed the morning's events from distant capitals, "
       "and governments discovered that a diplomatic crisis could now escalate faster than "
       "any ambassador could travel to calm it.\n"},
  };
  return corpus;
}

// Shares no passage with the corpus.
inline std::string UnrelatedText() {
  return "Hiking above the tree line demands an early start, since afternoon storms build "
         "quickly over the ridges in summer. Walkers carry layers for the wind, more water "
         "than seems necessary, and a map that does not depend on a phone battery.\n\n"
         "The descent is harder on the knees than the climb, and many accidents happen on the "
         "last easy mile when tired legs stop paying attention to loose stones.\n";
}

// New text with the corpus document's second paragraph copied into its middle.
inline std::string ParagraphInsideNewText(const std::string& body) {
  const size_t p1 = body.find("\n\n");
  const size_t p2 = body.find("\n\n", p1 + 2);
  const std::string paragraph = body.substr(p1 + 2, p2 - p1 - 2);
  return "Committee notes from the spring meeting covered the budget, the new members and the "
         "plans for the autumn exhibition, which will open in the old market hall.\n\n" +
         paragraph +
         "\n\nThe treasurer reported that the roof repairs cost less than expected, and the "
         "remaining money will pay for new display cases and a ramp at the side entrance. "
         "Members agreed to meet again after the summer holidays.\n";
}

// Every sentence keeps its words except the third and the tenth, which are replaced.
inline std::string EditedCopy(const std::string& body) {
  std::string out;
  int word_in_sentence = 0;
  size_t i = 0;
  while (i < body.size()) {
    if (body[i] == ' ' || body[i] == '\n') {
      out += body[i++];
      continue;
    }
    size_t j = i;
    while (j < body.size() && body[j] != ' ' && body[j] != '\n') ++j;
    std::string word = body.substr(i, j - i);
    ++word_in_sentence;
    const bool ends = word.back() == '.';
    if (word_in_sentence == 3 || word_in_sentence == 10) {
      word = ends ? "altered." : "altered";
    }
    out += word;
    if (ends) word_in_sentence = 0;
    i = j;
  }
  return out;
}

// The corpus's first document in Windows-1252: curly quotes and an e-acute as single bytes.
inline std::string Windows1252Text() {
  return "The caf\xE9 by the harbour served \x93strong tea\x94 to the fishermen before dawn, "
         "and the owner kept a ledger of every boat that went out and every boat that came "
         "back, so that the families ashore would know within the hour if the weather had "
         "taken someone.\n\nOn market days the tables were pushed against the wall and the "
         "room filled with crates of herring, coils of rope and the smell of tar and "
         "woodsmoke from the stove in the corner.\n";
}

// `text` with every `nth` word (counting from 0) replaced by a word of its own.
inline std::string Reword(const std::string& text, int nth) {
  std::string out, word;
  int i = 0;
  auto flush = [&] {
    if (word.empty()) return;
    out += (i++ % nth == nth - 1) ? "zq" + std::to_string(i) : word;
    word.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
    } else {
      flush();
      out += c;
    }
  }
  flush();
  return out;
}

// A paragraph of pseudo-random words: different seeds share no passage.
inline std::string Prose(uint32_t seed, int words) {
  static const char* kSyllables[] = {"ka", "lo", "mi", "ne", "su", "tor", "vel", "dra",
                                     "pin", "gu", "ra", "shi", "on", "bel", "quo", "zen"};
  std::string out;
  uint64_t x = seed * 2654435761u + 1;
  for (int i = 0; i < words; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int syllables = 2 + static_cast<int>(x % 3);
    for (int s = 0; s < syllables; ++s) out += kSyllables[(x >> (8 + 4 * s)) % 16];
    out += (i % 12 == 11) ? ". " : " ";
  }
  return out;
}

}  // namespace cops::testing_corpus

#endif  // COPS_TESTS_SERVER_TEST_CORPUS_H_
