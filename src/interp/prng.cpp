// Threefry-2x32-20 and Philox-4x32-10, and XLA's packing of their words into rng_bit_generator's
// output (prng.h).
//
// THREE_FRY: the state is (key, counter). A 64-bit element i is the block of counter + i (the
// counter's low and high words in, the key's low and high words as the key), its two words joined
// low first; the counter advances by the element count. 32-bit elements halve the work, as XLA's
// SplitShapeIntoHalves does: the first even dimension (else the largest) is split into pairs, each
// pair being the two words of one block, the blocks counted over the halved shape; the counter
// advances by the blocks used. 8- and 16-bit elements are the 32-bit ones truncated.
// PHILOX (and DEFAULT): the key is state[0]; the 128-bit counter is (state[1], state[2]) for a
// 3-entry state and (state[1], state[0]) for a 2-entry one (XLA reverses the state). Blocks take
// counters counter + 0, 1, ...; a 32-bit element i is word i % 4 of block i / 4, a 64-bit element i
// the words (0, 1) or (2, 3) of block i / 2; the counter advances by the blocks used, and a
// 2-entry state keeps only the new counter's low word.
#include "interp/prng.h"

#include "support/error.h"

namespace tessera::interp::prng {

namespace {

uint32_t rotl(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }
uint32_t lo(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
uint64_t join(uint32_t low, uint32_t high) { return uint64_t{low} | (uint64_t{high} << 32); }

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The 32-bit words of `shape` from blocks of (key, counter + k): XLA's ThreeFryRngBit32.
std::vector<uint64_t> threefry32(uint64_t key, uint64_t& counter, const std::vector<int64_t>& shape) {
  std::array<uint32_t, 2> k{lo(key), hi(key)};
  auto block = [&](uint64_t c) { return threefry2x32({lo(c), hi(c)}, k); };
  int64_t n = count(shape);
  std::vector<uint64_t> out(static_cast<size_t>(n));
  if (shape.empty()) {  // a scalar: the first word of one block
    out[0] = block(counter)[0];
    counter += 1;
    return out;
  }
  size_t split = shape.size();
  for (size_t d = 0; d < shape.size() && split == shape.size(); ++d)
    if (shape[d] % 2 == 0) split = d;
  if (split == shape.size()) {
    split = 0;
    for (size_t d = 1; d < shape.size(); ++d)
      if (shape[d] > shape[split]) split = d;
  }
  std::vector<int64_t> half = shape;
  half[split] = (shape[split] + 1) / 2;
  // Element index (outer, j, inner) with j along `split` reads half element (outer, j / 2, inner).
  int64_t inner = 1;
  for (size_t d = split + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t dim = shape[split], half_dim = half[split];
  for (int64_t i = 0; i < n; ++i) {
    int64_t outer = i / (dim * inner), j = i / inner % dim, in = i % inner;
    int64_t h = (outer * half_dim + j / 2) * inner + in;
    out[static_cast<size_t>(i)] = block(counter + static_cast<uint64_t>(h))[static_cast<size_t>(j % 2)];
  }
  counter += static_cast<uint64_t>(count(half));
  return out;
}

// 128-bit counter + k
std::array<uint32_t, 4> add(uint64_t low, uint64_t high, uint64_t k) {
  uint64_t l = low + k;
  uint64_t h = high + (l < low ? 1 : 0);
  return {lo(l), hi(l), lo(h), hi(h)};
}

}  // namespace

std::array<uint32_t, 2> threefry2x32(std::array<uint32_t, 2> x, std::array<uint32_t, 2> key) {
  constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  // The key schedule: the two key words and their parity with Threefish's constant.
  const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  x[0] += ks[0];
  x[1] += ks[1];
  for (uint32_t group = 0; group < 5; ++group) {  // 5 groups of 4 rounds, a key injection after each
    for (int r = 0; r < 4; ++r) {
      x[0] += x[1];
      x[1] = rotl(x[1], kRotations[(group % 2) * 4 + static_cast<uint32_t>(r)]) ^ x[0];
    }
    x[0] += ks[(group + 1) % 3];
    x[1] += ks[(group + 2) % 3] + group + 1;
  }
  return x;
}

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> x, std::array<uint32_t, 2> key) {
  constexpr uint64_t kMulA = 0xD2511F53, kMulB = 0xCD9E8D57;
  constexpr uint32_t kWeylA = 0x9E3779B9, kWeylB = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = kMulA * x[0], p1 = kMulB * x[2];
    x = {hi(p1) ^ x[1] ^ key[0], lo(p1), hi(p0) ^ x[3] ^ key[1], lo(p0)};
    key = {key[0] + kWeylA, key[1] + kWeylB};
  }
  return x;
}

Bits generate(ir::RngAlgorithm algorithm, std::span<const uint64_t> state, const std::vector<int64_t>& shape, int bits) {
  TESSERA_CHECK(bits == 8 || bits == 16 || bits == 32 || bits == 64, "rng_bit_generator: {}-bit elements", bits);
  Bits r;
  r.state.assign(state.begin(), state.end());
  int64_t n = count(shape);
  uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  if (algorithm == ir::RngAlgorithm::kThreeFry) {
    TESSERA_CHECK(state.size() == 2, "THREE_FRY state of {} entries", state.size());
    uint64_t key = state[0], counter = state[1];
    if (bits == 64) {
      r.values.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        uint64_t c = counter + static_cast<uint64_t>(i);
        auto w = threefry2x32({lo(c), hi(c)}, {lo(key), hi(key)});
        r.values[static_cast<size_t>(i)] = join(w[0], w[1]);
      }
      counter += static_cast<uint64_t>(n);
    } else {
      r.values = threefry32(key, counter, shape);
      for (uint64_t& v : r.values) v &= mask;
    }
    r.state[1] = counter;
    return r;
  }
  TESSERA_CHECK(state.size() == 2 || state.size() == 3, "PHILOX state of {} entries", state.size());
  uint64_t key = state[0];
  uint64_t low = state[1], high = state.size() >= 3 ? state[2] : state[0];
  std::array<uint32_t, 2> k{lo(key), hi(key)};
  int64_t per_block = bits == 64 ? 2 : 4;
  int64_t blocks = (n + per_block - 1) / per_block;
  r.values.resize(static_cast<size_t>(n));
  for (int64_t b = 0; b < blocks; ++b) {
    auto w = philox4x32(add(low, high, static_cast<uint64_t>(b)), k);
    for (int64_t j = 0; j < per_block && b * per_block + j < n; ++j) {
      uint64_t v = bits == 64 ? join(w[static_cast<size_t>(2 * j)], w[static_cast<size_t>(2 * j + 1)])
                              : w[static_cast<size_t>(j)] & mask;
      r.values[static_cast<size_t>(b * per_block + j)] = v;
    }
  }
  auto next = add(low, high, static_cast<uint64_t>(blocks));
  r.state[1] = join(next[0], next[1]);
  if (state.size() >= 3) r.state[2] = join(next[2], next[3]);
  return r;
}

}  // namespace tessera::interp::prng
