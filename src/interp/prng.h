// The counter-based generators of stablehlo.rng_bit_generator, as XLA implements them
// (Salmon et al., SC 2011, "Parallel random numbers: as easy as 1, 2, 3"): the block functions
// Threefry-2x32 with 20 rounds and Philox-4x32 with 10, and XLA's use of them (its
// RngBitGeneratorExpander and prng.cc): which counters feed which blocks, how the block words are
// packed into 8-, 16-, 32- and 64-bit elements, and how the state advances. Tested against
// Random123's known-answer vectors and the spec's example.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "ir/rng.h"

namespace tessera::interp::prng {

std::array<uint32_t, 2> threefry2x32(std::array<uint32_t, 2> counter, std::array<uint32_t, 2> key);
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

struct Bits {
  std::vector<uint64_t> values;  // one per element, row-major, in the element's low `bits` bits
  std::vector<uint64_t> state;   // output_state
};

// rng_bit_generator's output of `shape` with elements of `bits` bits (8, 16, 32 or 64) from `state`
// (THREE_FRY: 2 entries; PHILOX and DEFAULT: 2 or 3).
Bits generate(ir::RngAlgorithm algorithm, std::span<const uint64_t> state, const std::vector<int64_t>& shape, int bits);

}  // namespace tessera::interp::prng
