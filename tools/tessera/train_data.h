// `tessera train`'s data: the corpus (a file or a folder of text), the held-out tail that
// --eval-every evaluates on, and the batches (random windows) of each.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/literal.h"

namespace tessera::tools {

inline constexpr const char* kDefaultCorpus = "/usr/share/games/fortunes";  // Debian's `fortunes` (BSD)
inline constexpr size_t kMinDefaultCorpus = 500 * 1024;

// The corpus as bytes: a file, or every plain file of a directory (sorted by name; fortune's
// .dat indexes and .u8 copies skipped).
std::string load_corpus(const std::string& path);

// The corpus cut in two for evaluation: the first 90 % to train on, the last 10 % held out. A
// tail, not random windows, so no held-out byte is ever trained on. Both parts must hold a
// sequence (`seq` + 2 bytes); the message names the corpus and the sizes otherwise.
struct CorpusSplit {
  std::string train, held_out;
};
CorpusSplit split_corpus(const std::string& text, int64_t seq, const std::string& corpus_path);
inline constexpr int kHeldOutPercent = 10;

// Random windows of a text: tokens and the next bytes as targets. Batch `t` depends only on the
// seed and t, so a run resumed from a checkpoint sees the batches the unbroken run would, and an
// evaluation sees the same held-out batches every time.
struct Batches {
  const std::string& text;
  int64_t batch, seq;
  uint64_t seed;
  std::pair<ir::Literal, ir::Literal> at(int64_t step) const;
  // The box [start, start + extent) of batch `step`'s tokens (or, with `targets`, its targets),
  // made alone: a rank builds only its own rows. The same values as the box of at(step).
  ir::Literal box(int64_t step, bool targets, const std::vector<int64_t>& start, const std::vector<int64_t>& extent) const;
};

}  // namespace tessera::tools
