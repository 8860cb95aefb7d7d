// safetensors files and sharded checkpoints (the format and the save protocol: checkpoint.h).
#include "runtime/checkpoint.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <climits>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "support/durable_file.h"
#include "runtime/layout.h"
#include "spmd/mesh_math.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::runtime {

namespace {

namespace fs = std::filesystem;
using support::crc32c;
using support::FileDigest;
using support::make_directory;
using support::read_file_bytes;
using support::sync_directory;
using support::write_file_atomically;
using ir::ElementType;
using ir::Literal;
using json = nlohmann::json;
using support::fail;

constexpr int64_t kVersion = 2;         // 1: index.json and device files in DIR, no sizes or checksums
constexpr int64_t kMaxDevices = 65536;  // a sanity bound on what an index may claim

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

// A value as a message shows it: its JSON type and (the start of) its text.
std::string describe(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", j.type_name(), text);
}

// A JSON value and its place in a file ("arrays[2].shape" of "ckpt/step-3/index.json"). The
// accessors check the type and name the field, so a file of the wrong structure is a UserError,
// never a json exception or a broken invariant further on.
struct Field {
  const json& j;
  const std::string* file;
  std::string path;  // empty at the top level

  [[noreturn]] void wrong(const char* expected) const {
    if (path.empty()) fail("{}: expected {} at the top level, not {}", *file, expected, describe(j));
    fail("{}: \"{}\" must be {}, not {}", *file, path, expected, describe(j));
  }
  bool has(const char* key) const { return j.is_object() && j.contains(key); }
  Field operator[](const char* key) const {
    if (!j.is_object()) wrong("an object");
    std::string p = path.empty() ? key : path + "." + key;
    auto it = j.find(key);
    if (it == j.end()) fail("{}: missing field \"{}\"", *file, p);
    return {*it, file, p};
  }
  size_t size() const {
    if (!j.is_array()) wrong("an array");
    return j.size();
  }
  Field operator[](size_t i) const { return {j.at(i), file, fmt::format("{}[{}]", path, i)}; }
  Field operator[](int i) const { return (*this)[static_cast<size_t>(i)]; }  // [0] is no const char*
  std::string str() const {
    if (!j.is_string()) wrong("a string");
    return j.get<std::string>();
  }
  int64_t integer(int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) wrong("an integer");
    // nlohmann keeps a non-negative number unsigned: compare it as one.
    bool in_range = j.is_number_unsigned()
                        ? j.get<uint64_t>() <= uint64_t(hi) && (lo <= 0 || j.get<uint64_t>() >= uint64_t(lo))
                        : j.get<int64_t>() >= lo && j.get<int64_t>() <= hi;
    if (!in_range)
      fail("{}: \"{}\" is {}, outside {}..{}", *file, path, j.dump(), lo, hi);
    return j.get<int64_t>();
  }
  std::vector<int64_t> integers(int64_t lo, int64_t hi) const {
    std::vector<int64_t> out;
    for (size_t i = 0, n = size(); i < n; ++i) out.push_back((*this)[i].integer(lo, hi));
    return out;
  }
};

json parse_json(std::string_view text, const std::string& file, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: {} is not JSON: {}", file, what, e.what());
  }
}

// Bytes of an array of `shape`, refusing counts that overflow.
uint64_t checked_bytes(const std::vector<int64_t>& shape, ElementType e, const std::string& what) {
  uint64_t n = static_cast<uint64_t>(ir::info(e).bytes);
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > uint64_t(INT64_MAX))
      fail("{}: the shape [{}] is too large (its byte count overflows)", what, support::join(shape, ", "));
  return n;
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

ir::Sharding sharding_from(const Field& dims, const std::string& mesh) {
  ir::Sharding s;
  s.mesh = mesh;
  for (size_t d = 0, n = dims.size(); d < n; ++d) {
    Field dim = dims[d];
    ir::DimSharding ds;
    for (size_t i = 0, m = dim.size(); i < m; ++i) {
      Field a = dim[i];
      if (a.j.is_string()) ds.axes.push_back(ir::AxisRef(a.str()));
      else if (a.j.is_object())
        ds.axes.push_back(ir::AxisRef(a["axis"].str(), ir::SubAxis{a["pre"].integer(1, kMaxDevices),
                                                                   a["size"].integer(1, kMaxDevices)}));
      else a.wrong("an axis name or {\"axis\", \"pre\", \"size\"}");
    }
    s.dims.push_back(ds);
  }
  return s;
}

// A safetensors file's bytes: `head` (header length and header), then each array's bytes.
struct Image {
  std::string head;
  std::vector<std::span<const std::byte>> data;
  std::vector<std::string_view> parts() const {
    std::vector<std::string_view> out = {head};
    for (auto d : data) out.push_back({reinterpret_cast<const char*>(d.data()), d.size()});
    return out;
  }
};

Image safetensors_image(const std::vector<std::pair<std::string, const Literal*>>& arrays,
                        const std::map<std::string, std::string>& metadata, const std::string& path) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  Image image;
  size_t offset = 0;
  for (const auto& [name, l] : arrays) {
    if (header.contains(name)) fail("safetensors {}: the name \"{}\" is used twice", path, name);
    header[name] = {{"dtype", dtype_of(l->element())}, {"shape", l->shape()}, {"data_offsets", {offset, offset + l->bytes().size()}}};
    offset += l->bytes().size();
    image.data.push_back(l->bytes());
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // the data starts 8-byte aligned
  for (int i = 0; i < 8; ++i) image.head += static_cast<char>(uint64_t(text.size()) >> (8 * i));
  image.head += text;
  return image;
}

}  // namespace

NamedArrays parse_safetensors(std::string_view bytes, const std::string& path, std::map<std::string, std::string>* metadata) {
  if (bytes.size() < 8) fail("{}: {} bytes, too short for a safetensors file", path, bytes.size());
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])) << (8 * i);
  if (n > bytes.size() - 8) fail("{}: a header of {} bytes in a file of {}", path, n, bytes.size());
  json header = parse_json(bytes.substr(8, n), path, "the header");
  Field root{header, &path, ""};
  if (!header.is_object()) root.wrong("an object");
  std::string_view data = bytes.substr(8 + n);
  // Arrays in file order (by offset), as safetensors writers lay them out.
  struct Entry {
    uint64_t begin, end;
    std::string name;
    ir::Type type;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    Field h{it.value(), &path, it.key()};
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) h.wrong("an object of strings");
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        if (std::string v = h[m.key().c_str()].str(); metadata) (*metadata)[m.key()] = v;
      continue;
    }
    std::string what = fmt::format("{}: \"{}\"", path, it.key());
    ir::Type t(element_of(h["dtype"].str(), what), h["shape"].integers(0, INT64_MAX));
    Field offsets = h["data_offsets"];
    if (offsets.size() != 2) offsets.wrong("[begin, end]");
    int64_t begin = offsets[0].integer(0, INT64_MAX), end = offsets[1].integer(0, INT64_MAX);
    if (begin > end || uint64_t(end) > data.size())
      fail("{} has data_offsets [{}, {}] outside the {} bytes of data (a truncated file?)", what, begin, end, data.size());
    uint64_t needed = checked_bytes(t.shape, t.element, what);
    if (uint64_t(end - begin) != needed)
      fail("{} holds {} bytes, its shape {} needs {}", what, end - begin, ir::to_string(t), needed);
    entries.push_back({uint64_t(begin), uint64_t(end), it.key(), t});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);  // an empty array before one at its offset
  });
  // The format asks the arrays to tile the data exactly: no overlap (two names for the same bytes)
  // and no hole (bytes no array owns, room for a second file format inside the first).
  uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin != covered)
      fail("{}: \"{}\" has data_offsets [{}, {}], but the arrays before it end at {} ({})", path, e.name, e.begin, e.end,
           covered, e.begin < covered ? "the arrays overlap" : "a gap no array owns");
    covered = e.end;
  }
  if (covered != data.size())
    fail("{}: the arrays end at byte {} of {} bytes of data (bytes after them belong to no array)", path, covered,
         data.size());
  NamedArrays out;
  for (const Entry& e : entries) {
    Literal l(e.type);
    if (!l.bytes().empty()) std::memcpy(l.bytes().data(), data.data() + e.begin, l.bytes().size());
    out.push_back({e.name, std::move(l)});
  }
  return out;
}

namespace {

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The checkpoint directories a save makes and later removes: step-<N> or step-<N>.<k>.
bool is_step_name(std::string_view s) {
  if (s.substr(0, 5) != "step-") return false;
  s.remove_prefix(5);
  size_t dot = s.find('.');
  return is_digits(s.substr(0, dot)) && (dot == std::string_view::npos || is_digits(s.substr(dot + 1)));
}

// "ckpt/" as "ckpt", so the paths in messages read well.
std::string without_trailing_slash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

bool exists(const std::string& path, bool* is_dir = nullptr) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  if (is_dir) *is_dir = S_ISDIR(st.st_mode);
  return true;
}

// The name `dir`/latest holds, checked to be a plain name inside `dir`.
std::string latest_name(const std::string& dir) {
  std::string file = dir + "/latest";
  std::string name = read_file_bytes(file);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  if (name.empty() || name == "." || name == ".." || name.find_first_of(std::string("/\n\0", 3)) != std::string::npos)
    fail("{}: expected the name of a checkpoint directory in {}, found {}", file, dir, describe(json(name)));
  return name;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, const Literal*>> views;
  for (const auto& [name, l] : arrays) views.push_back({name, &l});
  Image image = safetensors_image(views, metadata, path);
  write_file_atomically(path, image.parts());
}

NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  return parse_safetensors(read_file_bytes(path), path, metadata);
}

std::string to_safetensors(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, const Literal*>> views;
  for (const auto& [name, l] : arrays) views.push_back({name, &l});
  Image image = safetensors_image(views, metadata, "safetensors data");  // parts() point into it
  std::string out;
  for (std::string_view part : image.parts()) out += part;
  return out;
}

std::string save_sharded(const std::string& where, const std::vector<std::string>& names, const std::vector<ShardedBuffer>& buffers,
                         const ir::Mesh& mesh, int64_t step, const std::map<std::string, std::string>& metadata,
                         int keep) {
  const std::string dir = without_trailing_slash(where);
  TESSERA_CHECK(names.size() == buffers.size(), "{} names for {} buffers", names.size(), buffers.size());
  if (step < 0) fail("save_sharded {}: step {} is negative", dir, step);
  if (keep < 1) fail("save_sharded {}: keep {} checkpoints: at least the new one is kept", dir, keep);
  for (size_t i = 0; i < names.size(); ++i)
    if (buffers[i].donated()) fail("save_sharded: \"{}\" was donated", names[i]);
  size_t devices = buffers.empty() ? 0 : buffers[0].pieces->size();
  for (const auto& b : buffers) TESSERA_CHECK(b.pieces->size() == devices, "{} pieces, expected {}", b.pieces->size(), devices);

  // Where: DIR made if missing (a clear error when part of it is a file), then a fresh step-<N>.
  std::error_code ec;
  fs::create_directories(dir, ec);
  bool is_dir = false;
  if (ec || !exists(dir, &is_dir) || !is_dir)
    fail("{}: cannot create the checkpoint directory: {}", dir, ec ? ec.message() : std::strerror(ENOTDIR));
  std::optional<std::string> previous;  // what `latest` named before this save
  if (exists(dir + "/latest")) {
    try {
      previous = latest_name(dir);
    } catch (const support::UserError&) {  // an unreadable pointer is replaced; nothing to keep
    }
  }
  std::string name = fmt::format("step-{}", step);
  for (int k = 2; !make_directory(dir + "/" + name); ++k) name = fmt::format("step-{}.{}", step, k);
  const std::string path = dir + "/" + name;

  json index = {{"format", "tessera sharded checkpoint"}, {"version", kVersion}, {"step", step},
                {"mesh", {{"name", mesh.name}, {"axes", json::array()}}}, {"devices", devices},
                {"files", json::array()}, {"arrays", json::array()}};
  for (const auto& a : mesh.axes) index["mesh"]["axes"].push_back({a.name, a.size});
  index["mesh"]["device_ids"] = mesh.device_ids;
  if (!metadata.empty()) index["metadata"] = metadata;
  for (size_t i = 0; i < names.size(); ++i)
    index["arrays"].push_back({{"name", names[i]}, {"dtype", dtype_of(buffers[i].type.element)},
                               {"shape", buffers[i].type.shape}, {"sharding", sharding_json(buffers[i].sharding)}});
  bool switched = false;
  try {
    for (size_t d = 0; d < devices; ++d) {
      std::vector<std::pair<std::string, const Literal*>> pieces;
      for (size_t i = 0; i < names.size(); ++i) pieces.push_back({names[i], &(*buffers[i].pieces)[d]});
      std::string file = fmt::format("device-{}.safetensors", d);
      Image image = safetensors_image(pieces, {{"device", std::to_string(d)}}, path + "/" + file);
      FileDigest digest = write_file_atomically(path + "/" + file, image.parts(), /*sync_parent=*/false);
      index["files"].push_back({{"name", file}, {"bytes", digest.bytes}, {"crc32c", digest.crc32c}});
    }
    sync_directory(path);  // the device files' names are durable before the index that lists them
    std::string text = index.dump(2) + "\n";
    write_file_atomically(path + "/index.json", {text}, /*sync_parent=*/false);
    sync_directory(path);
    sync_directory(dir);  // step-<N> itself
    std::string pointer = name + "\n";
    write_file_atomically(dir + "/latest", {pointer}, /*sync_parent=*/false);
    switched = true;
    sync_directory(dir);
  } catch (const support::UserError&) {
    // Before the switch the new directory is garbage: remove it (best effort; the next save
    // removes what is left). After it, `latest` may already name it: keep it.
    if (!switched) fs::remove_all(path, ec);
    throw;
  }
  // The new checkpoint is complete and current: of the others, keep - 1 complete ones stay, the
  // previous checkpoint first (a killed save may leave a higher step with its index written but
  // never switched to), then the newest by step and by the .k of a retaken name; the rest go,
  // incomplete ones of killed saves included. A failure here costs disk space, not a checkpoint.
  struct Other {
    bool previous;
    uint64_t step, k;
    fs::path path;
  };
  std::vector<Other> others;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (!is_step_name(n) || n == name) continue;
    size_t dot = n.find('.');
    uint64_t k = dot == std::string::npos ? 1 : std::strtoull(n.c_str() + dot + 1, nullptr, 10);
    others.push_back({n == previous, std::strtoull(n.c_str() + 5, nullptr, 10), k, it->path()});
  }
  std::sort(others.begin(), others.end(), [](const Other& a, const Other& b) {
    return std::tie(a.previous, a.step, a.k) > std::tie(b.previous, b.step, b.k);
  });
  int kept = 1;  // the new one
  for (const Other& o : others) {
    if (kept < keep && exists((o.path / "index.json").string())) {
      ++kept;
      continue;
    }
    fs::remove_all(o.path, ec);
  }
  return path;
}

std::string checkpoint_directory(const std::string& where) {
  const std::string dir = without_trailing_slash(where);
  if (exists(dir + "/latest")) {
    std::string name = latest_name(dir);
    bool is_dir = false;
    if (!exists(dir + "/" + name, &is_dir) || !is_dir)
      fail("{}/latest names {}, which is not a directory there (removed by hand?)", dir, name);
    return dir + "/" + name;
  }
  if (exists(dir + "/index.json")) return dir;  // a step directory, or the version-1 layout
  bool is_dir = false;
  if (!exists(dir, &is_dir) || !is_dir) fail("{}: no such checkpoint directory", dir);
  fail("{}: no checkpoint here: neither `latest` nor index.json (a save that did not complete leaves no `latest`)", dir);
}

NamedArrays load_sharded(const std::string& where, std::map<std::string, std::string>* metadata) {
  const std::string dir = checkpoint_directory(where);
  return load_sharded_from(read_file_bytes(dir + "/index.json"), dir,
                           [&](const std::string& name) { return read_file_bytes(dir + "/" + name); }, metadata);
}

NamedArrays load_sharded_from(std::string_view index_text, const std::string& dir,
                              const std::function<std::string(const std::string& name)>& read_file,
                              std::map<std::string, std::string>* metadata) {
  const std::string index_file = dir + "/index.json";
  json index = parse_json(index_text, index_file, "the index");
  Field root{index, &index_file, ""};
  if (!index.is_object()) root.wrong("an object");
  int64_t version = root.has("version") ? root["version"].integer(1, INT64_MAX) : 1;
  if (version > kVersion) fail("{}: version {}, but this Tessera reads versions 1 to {}", index_file, version, kVersion);
  if (metadata) {
    metadata->clear();
    if (root.has("metadata")) {
      Field md = root["metadata"];
      if (!md.j.is_object()) md.wrong("an object of strings");
      for (const auto& [key, value] : md.j.items()) (*metadata)[key] = md[key.c_str()].str();
    }
  }

  Field m = root["mesh"];
  ir::Mesh mesh{m["name"].str(), {}, m["device_ids"].integers(0, kMaxDevices - 1)};
  Field axes = m["axes"];
  int64_t mesh_devices = 1;
  for (size_t i = 0, n = axes.size(); i < n; ++i) {
    if (axes[i].size() != 2) axes[i].wrong("[name, size]");
    mesh.axes.push_back({axes[i][0].str(), axes[i][1].integer(1, kMaxDevices)});
    mesh_devices *= mesh.axes.back().size;
    if (mesh_devices > kMaxDevices) fail("{}: the mesh has more than {} devices", index_file, kMaxDevices);
  }
  size_t devices = static_cast<size_t>(root["devices"].integer(0, kMaxDevices));
  Field arrays = root["arrays"];
  try {
    ir::validate(mesh);
    if (arrays.size() > 0 && (spmd::is_maximal(mesh) ? mesh.device_ids[0] >= int64_t(devices) : mesh_devices > int64_t(devices)))
      fail("\"devices\" is {}, fewer than mesh @{} needs", devices, mesh.name);
  } catch (const support::UserError& e) {
    fail("{}: {}", index_file, e.what());
  }

  // The devices whose pieces make the whole arrays (assemble's): others may hold placeholders.
  std::vector<bool> used(devices, false);
  if (arrays.size() > 0 && (spmd::is_maximal(mesh) || mesh.axes.empty())) {
    if (devices > 0) used[spmd::is_maximal(mesh) ? size_t(mesh.device_ids[0]) : 0] = true;
  } else if (arrays.size() > 0) {
    for (int64_t p = 0; p < mesh_devices; ++p) used[size_t(spmd::device_at(mesh, p))] = true;
  }

  // Each device's file, its size and checksum checked against the index before it is parsed.
  std::vector<NamedArrays> files;
  std::optional<Field> listed;
  if (version >= 2) {
    listed.emplace(root["files"]);
    if (listed->size() != devices) fail("{}: \"files\" lists {} files for {} devices", index_file, listed->size(), devices);
  }
  for (size_t d = 0; d < devices; ++d) {
    std::string name = fmt::format("device-{}.safetensors", d), path = dir + "/" + name;
    std::string bytes = read_file(name);
    if (listed) {
      Field f = (*listed)[d];
      if (f["name"].str() != name) fail("{}: \"{}.name\" is {}, expected {}", index_file, f.path, f["name"].j.dump(), name);
      int64_t size = f["bytes"].integer(0, INT64_MAX);
      uint32_t crc = static_cast<uint32_t>(f["crc32c"].integer(0, UINT32_MAX));
      if (bytes.size() != uint64_t(size))
        fail("{}: {} bytes, but the index says {} (the file was cut short or changed)", path, bytes.size(), size);
      if (uint32_t got = crc32c(bytes); got != crc)
        fail("{}: CRC-32C 0x{:08x}, but the index says 0x{:08x} (the file is corrupt)", path, got, crc);
    }
    files.push_back(parse_safetensors(bytes, path, nullptr));
  }

  NamedArrays out;
  for (size_t i = 0, n = arrays.size(); i < n; ++i) {
    Field a = arrays[i];
    std::string name = a["name"].str();
    ir::Type global(element_of(a["dtype"].str(), fmt::format("{}: \"{}\"", index_file, a.path)), a["shape"].integers(0, INT64_MAX));
    checked_bytes(global.shape, global.element, fmt::format("{}: \"{}\"", index_file, name));
    ir::Sharding sharding = sharding_from(a["sharding"], mesh.name);
    if (sharding.dims.empty()) sharding.dims.resize(global.shape.size());  // [] is replicated too
    ir::Type local = global;
    try {
      ir::validate(sharding, mesh, global, fmt::format("\"{}\"", name));
      if (!mesh.axes.empty()) local.shape = spmd::local_shape(global.shape, sharding, mesh);
    } catch (const support::UserError& e) {
      fail("{}: {}", index_file, e.what());
    }
    std::vector<Literal> pieces;
    for (size_t d = 0; d < devices; ++d) {
      if (i >= files[d].size() || files[d][i].first != name) fail("{}/device-{}.safetensors lacks \"{}\"", dir, d, name);
      if (used[d] && files[d][i].second.type() != local)
        fail("{}/device-{}.safetensors: \"{}\" is {}, its sharding in the index makes its piece {}", dir, d, name,
             ir::to_string(files[d][i].second.type()), ir::to_string(local));
      pieces.push_back(std::move(files[d][i].second));
    }
    out.push_back({name, assemble(pieces, global, sharding, mesh)});
  }
  return out;
}

}  // namespace tessera::runtime
