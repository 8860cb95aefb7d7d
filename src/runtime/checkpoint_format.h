// What the checkpoint writer (checkpoint.cpp) and the piece-wise reader (checkpoint_pieces.cpp)
// share of the formats in checkpoint.h: safetensors' dtype names, checked JSON fields that name
// their place in a file, a safetensors header parsed without its data, shardings as JSON, and the
// contiguous runs of bytes a box of a row-major piece occupies. Internal to the runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::runtime::ckpt {

using json = nlohmann::json;

constexpr int64_t kVersion = 3;         // 3: per-piece CRC-32Cs; 2: per-file; 1: no sizes or checksums
constexpr int64_t kMaxDevices = 65536;  // a sanity bound on what an index may claim

std::string dtype_of(ir::ElementType e);
ir::ElementType element_of(const std::string& dtype, const std::string& what);
// A value as a message shows it: its JSON type and (the start of) its text.
std::string describe(const json& j);
json parse_json(std::string_view text, const std::string& file, const char* what);
// Bytes of an array of `shape`, refusing counts that overflow.
uint64_t checked_bytes(const std::vector<int64_t>& shape, ir::ElementType e, const std::string& what);

// A JSON value and its place in a file ("arrays[2].shape" of "ckpt/step-3/index.json"). The
// accessors check the type and name the field, so a file of the wrong structure is a UserError,
// never a json exception or a broken invariant further on.
struct Field {
  const json& j;
  const std::string* file;
  std::string path;  // empty at the top level

  [[noreturn]] void wrong(const char* expected) const;
  bool has(const char* key) const { return j.is_object() && j.contains(key); }
  Field operator[](const char* key) const;
  size_t size() const;
  Field operator[](size_t i) const;
  Field operator[](int i) const { return (*this)[static_cast<size_t>(i)]; }  // [0] is no const char*
  std::string str() const;
  int64_t integer(int64_t lo, int64_t hi) const;
  std::vector<int64_t> integers(int64_t lo, int64_t hi) const;
};

json sharding_json(const ir::Sharding& s);
ir::Sharding sharding_from(const Field& dims, const std::string& mesh);

// One array of a safetensors header: its bytes [begin, end) of the data (after the header).
struct HeaderEntry {
  uint64_t begin = 0, end = 0;
  std::string name;
  ir::Type type;
};
// The header JSON of a safetensors file whose data has `data_bytes` bytes, checked: every field,
// each array's offsets against its shape, and the arrays tiling the data exactly. The entries in
// file order (by offset); `path` names the file in messages.
std::vector<HeaderEntry> parse_header(std::string_view header, uint64_t data_bytes, const std::string& path,
                                      std::map<std::string, std::string>* metadata);

// The contiguous runs of bytes (offset, length) that the box [start, start + extent) of a
// row-major array of `shape` with elements of `element_bytes` occupies, in row-major order of the
// box (so the runs one after the other are the box's own row-major bytes). None when the box is
// empty.
void for_each_run(const std::vector<int64_t>& shape, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& extent, int64_t element_bytes,
                  const std::function<void(uint64_t offset, uint64_t length)>& fn);

// CRC-32C of the valid box [0, extent) of a piece (its padding left out): what index.json's
// "pieces" of version 3 record, and what the reader checks whenever it reads a piece's box whole.
uint32_t piece_crc32c(const ir::Literal& piece, const std::vector<int64_t>& extent);

}  // namespace tessera::runtime::ckpt
