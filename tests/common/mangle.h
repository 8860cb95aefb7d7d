// Random edits of texts, for tests that a reader either reads or refuses with a message (a
// UserError) whatever it is given, and never crashes: each case takes one of the texts and makes 1
// to 3 edits (a character replaced, inserted or erased, drawn from `alphabet`).
#pragma once

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace tessera::testing {

struct MangledCounts {
  int read = 0, refused = 0;
};

// `read` gets each mangled text and throws support::UserError to refuse it.
template <class Read>
MangledCounts read_mangled(const std::vector<std::string>& texts, std::string_view alphabet, unsigned seed,
                           int cases, Read read) {
  std::mt19937 rng(seed);
  MangledCounts n;
  for (int k = 0; k < cases; ++k) {
    std::string t = texts[rng() % texts.size()];
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0 && !t.empty(); --edits) {
      size_t at = rng() % t.size();
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: t[at] = c; break;
        case 1: t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: t.erase(at, 1);
      }
    }
    try {
      read(t);
      ++n.read;
    } catch (const support::UserError&) {
      ++n.refused;
    }
  }
  return n;
}

}  // namespace tessera::testing
