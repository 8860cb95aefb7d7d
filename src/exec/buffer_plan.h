// The static buffer plan of an Executable (executable.h), and the arena a run lays values out in.
//
// Every shape is static, so the bytes of every value a function computes, and the steps between
// which it is live, are known when the function is compiled. plan_buffers gives each value an
// offset in one block of memory such that no two values live at the same step overlap: values
// largest first, each at the lowest offset that the values already placed and live at one of its
// steps leave free (first fit). A value may name one that dies at the step that defines it and
// whose storage the kernel of that step may write over (an element-wise op reading each element
// before writing it): it goes at that value's offset when nothing else is in the way. The size of
// the block is the plan's peak: what a run holds for its values, known exactly before it runs.
//
// An Arena is that block for one run context: allocated once, advised for huge pages when large (a
// first touch costs about 11 us per 4 KiB page here, 0.2 with huge pages: DESIGN.md §6), never
// zero-filled (every kernel writes its whole result before anything reads it), counted against
// the memory limit like every array (support/memory.h), and reused by every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tessera::exec {

struct LiveRange {
  int64_t bytes = 0;
  uint32_t first = 0, last = 0;  // the steps that define it and that read it last (inclusive)
  int64_t over = -1;             // a value (index) whose storage it may take: dies at `first`
};

struct BufferPlan {
  std::vector<int64_t> offsets;  // per value, aligned to kAlign
  int64_t bytes = 0;             // the arena's size
  static constexpr int64_t kAlign = 64;
};

BufferPlan plan_buffers(std::span<const LiveRange> values);

class Arena {
 public:
  // `bytes` of uninitialized memory (none for 0); a MemoryLimitError past the memory limit.
  explicit Arena(int64_t bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  std::byte* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  int64_t size_ = 0;
  bool mapped_ = false;  // mmap'd (large), else from the heap
};

}  // namespace tessera::exec
