// Sizes from outside, checked, and the bytes of array data held in this process, against a limit.
//
// Shapes and sizes come from files and command lines: their element counts and byte sizes are
// multiplied with overflow checks (checked_product), so tensor<4294967296x4294967296xf32> is an
// error naming the shape, not a count that wraps to 0. Every array buffer (ir::Literal) is
// allocated through CountedAllocator, which adds its bytes to one process-wide count and refuses an
// allocation that would take the count past the limit: by default this machine's physical memory,
// lowered by the environment variable TESSERA_MAX_BYTES or set_memory_limit (the CLI's
// --max-bytes). A program too big for the machine is then a UserError before it allocates,
// instead of std::bad_alloc or the kernel's OOM killer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "support/error.h"

namespace tessera::support {

// The product of `values`, or nullopt when it overflows int64 (or a value is negative).
std::optional<int64_t> checked_product(std::span<const int64_t> values);
// The product of a shape and an element size in bytes, or nullopt when it overflows int64.
std::optional<int64_t> checked_bytes(std::span<const int64_t> shape, int64_t element_bytes);
// ceil(a / b) for a >= 0 and b > 0 without the overflow of a + b - 1 (a slice's stride from a file
// may be 2^63 - 1): the length of a strided slice of a elements.
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// An allocation the memory limit refuses (a UserError: the program or the command asks for more
// than this machine has, or than --max-bytes allows).
class MemoryLimitError : public UserError {
 public:
  using UserError::UserError;
};

int64_t memory_limit();              // bytes
void set_memory_limit(int64_t bytes);  // <= 0: back to the default
int64_t bytes_held();                // array bytes allocated now, all threads together
// The most bytes_held has been since the process started or the last reset: the measured peak
// that memory estimates are checked against.
int64_t peak_bytes_held();
void reset_peak_bytes_held();
void reserve_bytes(int64_t bytes);   // throws MemoryLimitError past the limit
void release_bytes(int64_t bytes);
// "2.00 GiB", "512 B": sizes in messages.
std::string format_bytes(int64_t bytes);

template <typename T>
struct CountedAllocator {
  using value_type = T;
  CountedAllocator() = default;
  template <typename U>
  CountedAllocator(const CountedAllocator<U>&) {}
  T* allocate(size_t n) {
    int64_t bytes = static_cast<int64_t>(n * sizeof(T));
    reserve_bytes(bytes);
    try {
      return std::allocator<T>().allocate(n);
    } catch (const std::bad_alloc&) {
      release_bytes(bytes);
      throw MemoryLimitError("cannot allocate " + format_bytes(bytes) + ": out of memory");
    }
  }
  void deallocate(T* p, size_t n) {
    std::allocator<T>().deallocate(p, n);
    release_bytes(static_cast<int64_t>(n * sizeof(T)));
  }
  template <typename U>
  bool operator==(const CountedAllocator<U>&) const { return true; }
};

}  // namespace tessera::support
