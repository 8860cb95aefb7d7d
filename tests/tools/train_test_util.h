// Shared by the `tessera train` tests (train_cmd_test.cpp, train_pipeline_test.cpp): the small
// model and corpus they train, and readers of what a run prints and of its --losses file.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tools/tessera/train_cmd.h"

namespace tessera::tools {

// What a run prints; a run that fails fails the test.
inline std::string run(const TrainCommand& c) {
  std::ostringstream out;
  EXPECT_EQ(train_command(c, out), 0) << out.str();
  return out.str();
}

inline TrainCommand small(const std::filesystem::path& corpus) {
  TrainCommand c;
  c.corpus = corpus.string();
  c.d_model = 32;
  c.layers = 1;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 64;
  c.batch = 8;
  c.seq = 16;
  c.lr = 1e-2;
  c.sample = 0;
  c.progress_bar = false;
  return c;
}

inline std::string corpus_text() {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  return text;
}

// Writes corpus_text() to `dir`/corpus.txt and returns its path.
inline std::filesystem::path write_corpus(const std::filesystem::path& dir) {
  std::filesystem::path path = dir / "corpus.txt";
  std::ofstream(path) << corpus_text();
  return path;
}

// The loss printed for step `t`.
inline double loss_at(const std::string& out, int64_t t) {
  std::regex line("step " + std::to_string(t) + "/[0-9]+  loss ([0-9.]+)");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(out, m, line)) << out;
  return m.empty() ? -1 : std::stod(m[1]);
}

// The lines of a --losses file ("<step> <%.9g> <hex float>"), by step.
inline std::vector<std::string> loss_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The losses a --losses file holds, by step.
inline std::vector<double> read_losses(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<double> out;
  int64_t step = 0;
  double loss = 0;
  std::string hex;
  while (in >> step >> loss >> hex) out.push_back(loss);
  return out;
}

// The same losses' bits (the hex column).
inline std::vector<std::string> read_loss_bits(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  int64_t step = 0;
  double loss = 0;
  std::string hex;
  while (in >> step >> loss >> hex) out.push_back(hex);
  return out;
}

}  // namespace tessera::tools
