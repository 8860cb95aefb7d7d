// Offsets for the values of an Executable from their live ranges (first fit, largest first), and
// the arena they live in. See buffer_plan.h.
#include "exec/buffer_plan.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "support/memory.h"

namespace tessera::exec {

namespace {

int64_t aligned(int64_t n) { return (n + BufferPlan::kAlign - 1) / BufferPlan::kAlign * BufferPlan::kAlign; }

bool meet(const LiveRange& a, const LiveRange& b) { return a.first <= b.last && b.first <= a.last; }

// Huge pages pay off from one huge page up; smaller arenas come from the heap.
constexpr int64_t kHugePage = int64_t{2} << 20;

}  // namespace

BufferPlan plan_buffers(std::span<const LiveRange> values) {
  BufferPlan plan;
  plan.offsets.assign(values.size(), -1);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first, then in program order (a value named by `over` is defined before its taker).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (values[a].bytes != values[b].bytes) return values[a].bytes > values[b].bytes;
    return values[a].first < values[b].first;
  });
  std::vector<size_t> placed;
  struct Busy {
    int64_t begin, end;  // bytes of a placed value that meets this one
    size_t value;
  };
  std::vector<Busy> busy;
  for (size_t v : order) {
    const LiveRange& r = values[v];
    int64_t size = aligned(std::max<int64_t>(r.bytes, 1));
    int64_t over = r.over >= 0 && plan.offsets[static_cast<size_t>(r.over)] >= 0 &&
                           values[static_cast<size_t>(r.over)].last == r.first &&
                           aligned(values[static_cast<size_t>(r.over)].bytes) >= size
                       ? r.over
                       : -1;
    // The storage of `over` is in the way except at its own offset (where the kernel writes each
    // element over the one it reads).
    busy.clear();
    for (size_t p : placed)
      if (meet(values[p], r))
        busy.push_back({plan.offsets[p], plan.offsets[p] + aligned(std::max<int64_t>(values[p].bytes, 1)), p});
    std::sort(busy.begin(), busy.end(), [](const Busy& a, const Busy& b) { return a.begin < b.begin; });
    int64_t at = -1;
    if (over >= 0) {
      at = plan.offsets[static_cast<size_t>(over)];
      for (const Busy& b : busy)
        if (static_cast<int64_t>(b.value) != over && b.begin < at + size && at < b.end) at = -1;
    }
    if (at < 0) {
      at = 0;
      for (auto [b, e, p] : busy) {  // sorted by start: the first gap that holds it
        if (b >= at + size) break;
        at = std::max(at, e);
      }
    }
    plan.offsets[v] = at;
    plan.bytes = std::max(plan.bytes, at + size);
    placed.push_back(v);
  }
  return plan;
}

Arena::Arena(int64_t bytes) : size_(bytes) {
  if (bytes <= 0) return;
  support::reserve_bytes(bytes);
  if (bytes >= kHugePage) {
    void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      madvise(p, static_cast<size_t>(bytes), MADV_HUGEPAGE);  // advice only: fine if refused
      data_ = static_cast<std::byte*>(p);
      mapped_ = true;
      return;
    }
  } else {
    data_ = static_cast<std::byte*>(std::aligned_alloc(BufferPlan::kAlign, static_cast<size_t>(aligned(bytes))));
    if (data_ != nullptr) return;
  }
  support::release_bytes(bytes);
  throw support::MemoryLimitError("cannot allocate an arena of " + support::format_bytes(bytes) + ": out of memory");
}

Arena::~Arena() {
  if (data_ == nullptr) return;
  if (mapped_) munmap(data_, static_cast<size_t>(size_));
  else std::free(data_);
  support::release_bytes(size_);
}

}  // namespace tessera::exec
