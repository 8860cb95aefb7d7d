// `tessera train`'s corpus and batches (train_data.h).
#include "tools/tessera/train_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "support/error.h"
#include "support/strings.h"

namespace tessera::tools {

namespace fs = std::filesystem;
using support::fail;

std::string load_corpus(const std::string& path) {
  std::string text;
  auto add = [&](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    text.append(std::istreambuf_iterator<char>(in), {});
  };
  if (fs::is_directory(path)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_regular_file() && !e.is_symlink() && e.path().extension().empty()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
  } else if (fs::is_regular_file(path)) {
    add(path);
  } else {
    fail("--corpus {}: no such file or directory{}", path,
         path == kDefaultCorpus ? " (install Debian's `fortunes` package, or give --corpus)" : "");
  }
  return text;
}

CorpusSplit split_corpus(const std::string& text, int64_t seq, const std::string& corpus_path) {
  size_t held = text.size() * kHeldOutPercent / 100;
  size_t need = static_cast<size_t>(seq) + 2;
  if (held < need || text.size() - held < need)
    fail("--eval-every: the corpus {} ({} bytes) is too short to hold out its last {} % ({} bytes) and still have "
         "{} bytes (a sequence of --seq {}, and the next byte) in each part",
         corpus_path, text.size(), kHeldOutPercent, held, need, seq);
  return {text.substr(0, text.size() - held), text.substr(text.size() - held)};
}

ir::Literal Batches::box(int64_t step, bool targets, const std::vector<int64_t>& start,
                         const std::vector<int64_t>& extent) const {
  if (start.size() != 2 || extent.size() != 2 || start[0] < 0 || start[1] < 0 || start[0] + extent[0] > batch ||
      start[1] + extent[1] > seq)
    fail("batches: the box at {} of extent {} is outside a batch of {}x{}", support::shape_string(start),
         support::shape_string(extent), batch, seq);
  // Row b's window is the b-th draw: the rows before the box are drawn and dropped.
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(step));
  std::uniform_int_distribution<size_t> pick(0, text.size() - static_cast<size_t>(seq) - 2);
  for (int64_t b = 0; b < start[0]; ++b) pick(rng);
  std::vector<int64_t> values;
  values.reserve(static_cast<size_t>(extent[0] * extent[1]));
  const size_t shift = targets ? 1 : 0;
  for (int64_t b = 0; b < extent[0]; ++b) {
    size_t at = pick(rng) + shift;
    for (int64_t s = start[1]; s < start[1] + extent[1]; ++s)
      values.push_back(static_cast<unsigned char>(text[at + static_cast<size_t>(s)]));
  }
  return ir::Literal::from_ints(ir::i32(extent), values);
}

std::pair<ir::Literal, ir::Literal> Batches::at(int64_t step) const {
  return {box(step, false, {0, 0}, {batch, seq}), box(step, true, {0, 0}, {batch, seq})};
}

}  // namespace tessera::tools
