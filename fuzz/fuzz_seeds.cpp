// fuzz_seeds TARGET DIR: writes the target's seed inputs (targets.h, seeds()) into DIR, one file
// each. make_corpus.sh runs it for every target.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fuzz/targets.h"

int main(int argc, char** argv) {
  if (argc != 3 || !tessera::fuzz::find_target(argv[1])) {
    std::fprintf(stderr, "usage: fuzz_seeds TARGET DIR (targets:");
    for (const auto& t : tessera::fuzz::targets()) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, ")\n");
    return 2;
  }
  std::filesystem::create_directories(argv[2]);
  for (const auto& [name, bytes] : tessera::fuzz::seeds(argv[1])) {
    std::ofstream out(std::filesystem::path(argv[2]) / name, std::ios::binary);
    out << bytes;
    if (!out) {
      std::fprintf(stderr, "fuzz_seeds: cannot write %s/%s\n", argv[2], name.c_str());
      return 1;
    }
  }
  return 0;
}
