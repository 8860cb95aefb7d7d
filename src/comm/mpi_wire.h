// The byte layout of what MPI ranks send each other: fixed-width integers, strings and byte runs
// appended to a buffer and read back in the same order. Both ends are the same build on the same
// kind of host, so integers go in host byte order; a short or malformed message is a bug in
// Tessera (an InternalError), never the user's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "support/error.h"

namespace tessera::comm::wire {

template <typename T>
  requires std::is_trivially_copyable_v<T>
void put(std::vector<std::byte>& out, T value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

inline void put_bytes(std::vector<std::byte>& out, std::span<const std::byte> bytes) {
  put<uint64_t>(out, bytes.size());
  out.insert(out.end(), bytes.begin(), bytes.end());
}

inline void put_string(std::vector<std::byte>& out, std::string_view s) {
  put_bytes(out, std::as_bytes(std::span(s.data(), s.size())));
}

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}

  template <typename T>
    requires std::is_trivially_copyable_v<T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
  }
  std::span<const std::byte> get_bytes() { return take(get<uint64_t>()); }
  std::string get_string() {
    auto b = get_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  std::span<const std::byte> rest() { return take(in_.size() - at_); }
  bool done() const { return at_ == in_.size(); }

 private:
  std::span<const std::byte> take(size_t n) {
    TESSERA_CHECK(n <= in_.size() - at_, "an MPI message is shorter than its layout ({} bytes wanted at {} of {})",
                  n, at_, in_.size());
    auto s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }
  std::span<const std::byte> in_;
  size_t at_ = 0;
};

}  // namespace tessera::comm::wire
