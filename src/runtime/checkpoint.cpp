// safetensors files and sharded checkpoints (see checkpoint.h).
#include "runtime/checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/layout.h"
#include "support/error.h"

namespace tessera::runtime {

namespace {

using ir::ElementType;
using ir::Literal;
using json = nlohmann::json;
using support::fail;

// safetensors' dtype names.
const std::pair<ElementType, const char*> kDtypes[] = {
    {ElementType::f64, "F64"}, {ElementType::f32, "F32"}, {ElementType::f16, "F16"}, {ElementType::bf16, "BF16"},
    {ElementType::i64, "I64"}, {ElementType::i32, "I32"}, {ElementType::i16, "I16"}, {ElementType::i8, "I8"},
    {ElementType::ui64, "U64"}, {ElementType::ui32, "U32"}, {ElementType::ui16, "U16"}, {ElementType::ui8, "U8"},
    {ElementType::i1, "BOOL"}, {ElementType::f8E4M3FN, "F8_E4M3"}, {ElementType::f8E5M2, "F8_E5M2"}};

std::string dtype_of(ElementType e) {
  for (auto [t, name] : kDtypes)
    if (t == e) return name;
  fail("safetensors has no dtype for element type {}", ir::spelling(e));
}

ElementType element_of(const std::string& dtype, const std::string& what) {
  for (auto [t, name] : kDtypes)
    if (dtype == name) return t;
  fail("{}: unknown safetensors dtype \"{}\"", what, dtype);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read the file", path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

json sharding_json(const ir::Sharding& s) {
  json dims = json::array();
  for (const auto& d : s.dims) {
    json axes = json::array();
    for (const auto& a : d.axes)
      axes.push_back(a.sub ? json{{"axis", a.name}, {"pre", a.sub->pre_size}, {"size", a.sub->size}} : json(a.name));
    dims.push_back(axes);
  }
  return dims;
}

ir::Sharding sharding_from(const json& dims, const std::string& mesh) {
  ir::Sharding s;
  s.mesh = mesh;
  for (const auto& d : dims) {
    ir::DimSharding ds;
    for (const auto& a : d)
      ds.axes.push_back(a.is_string() ? ir::AxisRef(a.get<std::string>())
                                      : ir::AxisRef(a["axis"].get<std::string>(),
                                                    ir::SubAxis{a["pre"].get<int64_t>(), a["size"].get<int64_t>()}));
    s.dims.push_back(ds);
  }
  return s;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, l] : arrays) {
    if (header.contains(name)) fail("safetensors {}: the name \"{}\" is used twice", path, name);
    header[name] = {{"dtype", dtype_of(l.element())}, {"shape", l.shape()}, {"data_offsets", {offset, offset + l.bytes().size()}}};
    offset += l.bytes().size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // the data starts 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write the file", path);
  uint64_t n = text.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, l] : arrays)
    out.write(reinterpret_cast<const char*>(l.bytes().data()), static_cast<std::streamsize>(l.bytes().size()));
  if (!out) fail("{}: write failed", path);
}

NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::string bytes = read_file(path);
  if (bytes.size() < 8) fail("{}: too short for a safetensors file", path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])) << (8 * i);
  if (n > bytes.size() - 8) fail("{}: header of {} bytes in a file of {}", path, n, bytes.size());
  json header;
  try {
    header = json::parse(bytes.substr(8, n));
  } catch (const json::exception& e) {
    fail("{}: the header is not JSON: {}", path, e.what());
  }
  size_t data = 8 + n;
  // Arrays in file order (by offset), as safetensors writers lay them out.
  std::vector<std::pair<size_t, std::string>> order;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (metadata) *metadata = it.value().get<std::map<std::string, std::string>>();
      continue;
    }
    order.push_back({it.value()["data_offsets"][0].get<size_t>(), it.key()});
  }
  std::sort(order.begin(), order.end());
  NamedArrays out;
  for (const auto& [begin, name] : order) {
    const json& h = header[name];
    std::string what = fmt::format("{}: \"{}\"", path, name);
    ir::Type t(element_of(h["dtype"].get<std::string>(), what), h["shape"].get<std::vector<int64_t>>());
    Literal l(t);
    size_t end = h["data_offsets"][1].get<size_t>();
    if (end - begin != l.bytes().size() || data + end > bytes.size())
      fail("{} holds {} bytes, its shape needs {}", what, end - begin, l.bytes().size());
    std::memcpy(l.bytes().data(), bytes.data() + data + begin, l.bytes().size());
    out.push_back({name, std::move(l)});
  }
  return out;
}

void save_sharded(const std::string& dir, const std::vector<std::string>& names, const std::vector<ShardedBuffer>& buffers,
                  const ir::Mesh& mesh) {
  TESSERA_CHECK(names.size() == buffers.size(), "{} names for {} buffers", names.size(), buffers.size());
  std::filesystem::create_directories(dir);
  size_t devices = buffers.empty() ? 0 : buffers[0].pieces->size();
  json index = {{"mesh", {{"name", mesh.name}, {"axes", json::array()}}}, {"devices", devices}, {"arrays", json::array()}};
  for (const auto& a : mesh.axes) index["mesh"]["axes"].push_back({a.name, a.size});
  index["mesh"]["device_ids"] = mesh.device_ids;
  for (size_t i = 0; i < names.size(); ++i) {
    if (buffers[i].donated()) fail("save_sharded: \"{}\" was donated", names[i]);
    index["arrays"].push_back({{"name", names[i]}, {"dtype", dtype_of(buffers[i].type.element)},
                               {"shape", buffers[i].type.shape}, {"sharding", sharding_json(buffers[i].sharding)}});
  }
  for (size_t d = 0; d < devices; ++d) {
    NamedArrays pieces;
    for (size_t i = 0; i < names.size(); ++i) pieces.push_back({names[i], (*buffers[i].pieces)[d]});
    save_safetensors(fmt::format("{}/device-{}.safetensors", dir, d), pieces, {{"device", std::to_string(d)}});
  }
  std::ofstream(dir + "/index.json") << index.dump(2) << "\n";
}

NamedArrays load_sharded(const std::string& dir) {
  json index;
  try {
    index = json::parse(read_file(dir + "/index.json"));
  } catch (const json::exception& e) {
    fail("{}/index.json: {}", dir, e.what());
  }
  ir::Mesh mesh{index["mesh"]["name"].get<std::string>(), {}, index["mesh"]["device_ids"].get<std::vector<int64_t>>()};
  for (const auto& a : index["mesh"]["axes"]) mesh.axes.push_back({a[0].get<std::string>(), a[1].get<int64_t>()});
  size_t devices = index["devices"].get<size_t>();
  std::vector<NamedArrays> files;
  for (size_t d = 0; d < devices; ++d) files.push_back(load_safetensors(fmt::format("{}/device-{}.safetensors", dir, d)));
  NamedArrays out;
  for (size_t i = 0; i < index["arrays"].size(); ++i) {
    const json& a = index["arrays"][i];
    std::string name = a["name"].get<std::string>();
    ir::Type global(element_of(a["dtype"].get<std::string>(), name), a["shape"].get<std::vector<int64_t>>());
    std::vector<Literal> pieces;
    for (size_t d = 0; d < devices; ++d) {
      if (i >= files[d].size() || files[d][i].first != name) fail("{}/device-{}.safetensors lacks \"{}\"", dir, d, name);
      pieces.push_back(files[d][i].second);
    }
    out.push_back({name, assemble(pieces, global, sharding_from(a["sharding"], mesh.name), mesh)});
  }
  return out;
}

}  // namespace tessera::runtime
