// Program::seal (fusion_program.h): where each scratch register of a fused loop lies, from the
// registers' lifetimes over the loop's instructions.
#include "exec/fusion_program.h"

namespace tessera::exec::fusion_program {

void Program::seal(int result, std::span<const int> more) {
  const size_t n = kinds().size();
  constexpr int64_t kAlways = INT64_MAX;
  std::vector<int64_t>& from = w_->live_from;
  std::vector<int64_t>& to = w_->live_to;
  from.assign(n, kAlways);
  to.assign(n, -1);
  auto pin = [&](int r) {
    if (r < 0) return;
    from[static_cast<size_t>(r)] = -1;
    to[static_cast<size_t>(r)] = kAlways;
  };
  const std::span<const Instr> code = instrs();
  for (size_t i = 0; i < code.size(); ++i) {
    const auto at = static_cast<int64_t>(i);
    for (int r : code[i].in) {
      if (r < 0) continue;
      if (from[static_cast<size_t>(r)] == kAlways) pin(r);  // read before written
      to[static_cast<size_t>(r)] = std::max(to[static_cast<size_t>(r)], at);
    }
    // An invariant register is written in the first block only: no other may ever share its
    // place, in a later block either.
    if (code[i].invariant) pin(code[i].out);
    const auto out = static_cast<size_t>(code[i].out);
    from[out] = std::min(from[out], at);
    to[out] = std::max(to[out], at);
  }
  pin(result);
  for (int r : more) pin(r);
  std::vector<std::pair<int64_t, int64_t>>& free = w_->free_places;
  free.clear();
  scratch_bytes_ = 0;
  int64_t reused = 0;
  const bool share = shared_places_on();
  auto bytes_of = [&](size_t r) { return (kBlock * kinds()[r].width + 63) / 64 * 64; };
  auto place = [&](size_t r) {
    const int64_t bytes = share ? bytes_of(r) : kBlock * 8;
    auto it = std::find_if(free.begin(), free.end(), [&](const auto& f) { return share && f.first == bytes; });
    if (it != free.end()) {
      w_->kinds[r].offset = it->second;
      free.erase(it);
      ++reused;
    } else {
      w_->kinds[r].offset = scratch_bytes_;
      scratch_bytes_ += bytes;
    }
  };
  auto scratch_reg = [&](size_t r) { return !kinds()[r].in_place && from[r] != kAlways; };
  for (size_t r = 0; r < n; ++r)
    if (scratch_reg(r) && from[r] < 0) place(r);
  for (int64_t i = 0; i < static_cast<int64_t>(code.size()); ++i) {
    for (size_t r = 0; r < n; ++r)
      if (scratch_reg(r) && from[r] == i) place(r);
    for (size_t r = 0; r < n; ++r)  // after this instruction's output took its place
      if (scratch_reg(r) && to[r] == i)
        free.emplace_back(bytes_of(r), kinds()[r].offset);
  }
  if (reused > 0) count_register_reuses(reused);
  sealed_ = true;
  sealed_result_ = result;
}

}  // namespace tessera::exec::fusion_program
