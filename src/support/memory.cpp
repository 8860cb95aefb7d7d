#include "support/memory.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace tessera::support {
namespace {

std::atomic<int64_t> held{0};
std::atomic<int64_t> peak_held{0};
std::atomic<int64_t> limit_override{0};

int64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : INT64_MAX;
}

// TESSERA_MAX_BYTES, read once; a malformed value is ignored (the machine's memory applies).
int64_t environment_limit() {
  static const int64_t value = [] {
    const char* s = std::getenv("TESSERA_MAX_BYTES");
    if (s == nullptr || *s == '\0') return int64_t{0};
    char* end = nullptr;
    long long v = std::strtoll(s, &end, 10);
    return end != nullptr && *end == '\0' && v > 0 ? int64_t(v) : int64_t{0};
  }();
  return value;
}

}  // namespace

std::optional<int64_t> checked_product(std::span<const int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    if (v < 0 || __builtin_mul_overflow(p, v, &p)) return std::nullopt;
  return p;
}

std::optional<int64_t> checked_bytes(std::span<const int64_t> shape, int64_t element_bytes) {
  std::optional<int64_t> n = checked_product(shape);
  int64_t bytes = 0;
  if (!n || __builtin_mul_overflow(*n, element_bytes, &bytes)) return std::nullopt;
  return bytes;
}

int64_t memory_limit() {
  if (int64_t l = limit_override.load(std::memory_order_relaxed); l > 0) return l;
  if (int64_t l = environment_limit(); l > 0) return l;
  static const int64_t machine = physical_memory();
  return machine;
}

void set_memory_limit(int64_t bytes) { limit_override.store(bytes > 0 ? bytes : 0); }

int64_t bytes_held() { return held.load(std::memory_order_relaxed); }
int64_t peak_bytes_held() { return peak_held.load(std::memory_order_relaxed); }
void reset_peak_bytes_held() { peak_held.store(held.load(std::memory_order_relaxed), std::memory_order_relaxed); }

void reserve_bytes(int64_t bytes) {
  int64_t limit = memory_limit();
  int64_t before = held.fetch_add(bytes, std::memory_order_relaxed);
  if (bytes > limit - before) {
    held.fetch_sub(bytes, std::memory_order_relaxed);
    throw MemoryLimitError(fmt::format(
        "cannot allocate {} for an array: {} are held already and the limit is {} ({})", format_bytes(bytes),
        format_bytes(before), format_bytes(limit),
        limit_override.load() > 0 ? "--max-bytes"
        : environment_limit() > 0 ? "TESSERA_MAX_BYTES"
                                  : "this machine's memory"));
  }
  int64_t now = before + bytes;
  for (int64_t peak = peak_held.load(std::memory_order_relaxed);
       now > peak && !peak_held.compare_exchange_weak(peak, now, std::memory_order_relaxed);) {
  }
}

void release_bytes(int64_t bytes) { held.fetch_sub(bytes, std::memory_order_relaxed); }

std::string format_bytes(int64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace tessera::support
