// safetensors files and sharded checkpoints: the format's shared pieces (checkpoint_format.h), the
// safetensors reader and writer, and the owner-written save (the protocol: checkpoint.h). The
// piece-wise reader is checkpoint_pieces.cpp.
#include "runtime/checkpoint.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <tuple>

#include "runtime/checkpoint_format.h"
#include "runtime/layout.h"
#include "spmd/mesh_math.h"
#include "support/durable_file.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::runtime {

namespace ckpt {

using ir::ElementType;
using support::fail;

namespace {

// safetensors' dtype names.
const std::pair<ElementType, const char*> kDtypes[] = {
    {ElementType::f64, "F64"}, {ElementType::f32, "F32"}, {ElementType::f16, "F16"}, {ElementType::bf16, "BF16"},
    {ElementType::i64, "I64"}, {ElementType::i32, "I32"}, {ElementType::i16, "I16"}, {ElementType::i8, "I8"},
    {ElementType::ui64, "U64"}, {ElementType::ui32, "U32"}, {ElementType::ui16, "U16"}, {ElementType::ui8, "U8"},
    {ElementType::i1, "BOOL"}, {ElementType::f8E4M3FN, "F8_E4M3"}, {ElementType::f8E5M2, "F8_E5M2"}};

}  // namespace

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

std::string describe(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", j.type_name(), text);
}

void Field::wrong(const char* expected) const {
  if (path.empty()) fail("{}: expected {} at the top level, not {}", *file, expected, describe(j));
  fail("{}: \"{}\" must be {}, not {}", *file, path, expected, describe(j));
}

Field Field::operator[](const char* key) const {
  if (!j.is_object()) wrong("an object");
  std::string p = path.empty() ? key : path + "." + key;
  auto it = j.find(key);
  if (it == j.end()) fail("{}: missing field \"{}\"", *file, p);
  return {*it, file, p};
}

size_t Field::size() const {
  if (!j.is_array()) wrong("an array");
  return j.size();
}

Field Field::operator[](size_t i) const { return {j.at(i), file, fmt::format("{}[{}]", path, i)}; }

std::string Field::str() const {
  if (!j.is_string()) wrong("a string");
  return j.get<std::string>();
}

int64_t Field::integer(int64_t lo, int64_t hi) const {
  if (!j.is_number_integer()) wrong("an integer");
  // nlohmann keeps a non-negative number unsigned: compare it as one.
  bool in_range = j.is_number_unsigned()
                      ? j.get<uint64_t>() <= uint64_t(hi) && (lo <= 0 || j.get<uint64_t>() >= uint64_t(lo))
                      : j.get<int64_t>() >= lo && j.get<int64_t>() <= hi;
  if (!in_range) fail("{}: \"{}\" is {}, outside {}..{}", *file, path, j.dump(), lo, hi);
  return j.get<int64_t>();
}

std::vector<int64_t> Field::integers(int64_t lo, int64_t hi) const {
  std::vector<int64_t> out;
  for (size_t i = 0, n = size(); i < n; ++i) out.push_back((*this)[i].integer(lo, hi));
  return out;
}

json parse_json(std::string_view text, const std::string& file, const char* what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: {} is not JSON: {}", file, what, e.what());
  }
}

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

std::vector<HeaderEntry> parse_header(std::string_view text, uint64_t data_bytes, const std::string& path,
                                      std::map<std::string, std::string>* metadata) {
  json header = parse_json(text, path, "the header");
  Field root{header, &path, ""};
  if (!header.is_object()) root.wrong("an object");
  std::vector<HeaderEntry> entries;
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
    if (begin > end || uint64_t(end) > data_bytes)
      fail("{} has data_offsets [{}, {}] outside the {} bytes of data (a truncated file?)", what, begin, end, data_bytes);
    uint64_t needed = checked_bytes(t.shape, t.element, what);
    if (uint64_t(end - begin) != needed)
      fail("{} holds {} bytes, its shape {} needs {}", what, end - begin, ir::to_string(t), needed);
    entries.push_back({uint64_t(begin), uint64_t(end), it.key(), t});
  }
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);  // an empty array before one at its offset
  });
  // The format asks the arrays to tile the data exactly: no overlap (two names for the same bytes)
  // and no hole (bytes no array owns, room for a second file format inside the first).
  uint64_t covered = 0;
  for (const HeaderEntry& e : entries) {
    if (e.begin != covered)
      fail("{}: \"{}\" has data_offsets [{}, {}], but the arrays before it end at {} ({})", path, e.name, e.begin, e.end,
           covered, e.begin < covered ? "the arrays overlap" : "a gap no array owns");
    covered = e.end;
  }
  if (covered != data_bytes)
    fail("{}: the arrays end at byte {} of {} bytes of data (bytes after them belong to no array)", path, covered,
         data_bytes);
  return entries;
}

void for_each_run(const std::vector<int64_t>& shape, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& extent, int64_t element_bytes,
                  const std::function<void(uint64_t, uint64_t)>& fn) {
  const size_t rank = shape.size();
  for (int64_t e : extent)
    if (e <= 0) return;
  // Dimensions from `k` on form one run: those after k are whole, k itself is cut.
  size_t k = rank;
  int64_t run = element_bytes;
  while (k > 0) {
    run *= extent[k - 1];
    --k;
    if (extent[k] != shape[k]) break;
  }
  std::vector<int64_t> strides(rank, element_bytes);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  std::vector<int64_t> idx(k, 0);
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += (start[d] + (d < k ? idx[d] : 0)) * strides[d];
    fn(uint64_t(offset), uint64_t(run));
    size_t d = k;
    while (d-- > 0) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

uint32_t piece_crc32c(const ir::Literal& piece, const std::vector<int64_t>& extent) {
  uint32_t crc = 0;
  const char* bytes = reinterpret_cast<const char*>(piece.bytes().data());
  for_each_run(piece.shape(), std::vector<int64_t>(extent.size(), 0), extent, ir::info(piece.element()).bytes,
               [&](uint64_t offset, uint64_t length) { crc = support::crc32c({bytes + offset, length}, crc); });
  return crc;
}

}  // namespace ckpt

namespace {

namespace fs = std::filesystem;
using namespace ckpt;
using support::FileDigest;
using support::make_directory;
using support::read_file_bytes;
using support::sync_directory;
using support::write_file_atomically;
using ir::Literal;
using support::fail;

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

NamedArrays parse_safetensors(std::string_view bytes, const std::string& path, std::map<std::string, std::string>* metadata) {
  if (bytes.size() < 8) fail("{}: {} bytes, too short for a safetensors file", path, bytes.size());
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])) << (8 * i);
  if (n > bytes.size() - 8) fail("{}: a header of {} bytes in a file of {}", path, n, bytes.size());
  std::string_view data = bytes.substr(8 + n);
  NamedArrays out;
  for (const HeaderEntry& e : parse_header(bytes.substr(8, n), data.size(), path, metadata)) {
    Literal l(e.type);
    if (!l.bytes().empty()) std::memcpy(l.bytes().data(), data.data() + e.begin, l.bytes().size());
    out.push_back({e.name, std::move(l)});
  }
  return out;
}

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

namespace {

// TESSERA_CHECKPOINT_FILE_DELAY_MS=N: a save sleeps N ms before each file it writes, so a test can
// kill it at chosen moments of a save of a small model (tests/tools/checkpoint_kill_test.cpp).
void test_delay() {
  static const long ms = [] {
    const char* v = std::getenv("TESSERA_CHECKPOINT_FILE_DELAY_MS");
    return v ? std::strtol(v, nullptr, 10) : 0L;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Step 4 of a save: of the checkpoints other than the new one `name`, keep - 1 complete ones stay,
// the previous checkpoint first (a killed save may leave a higher step with its index written but
// never switched to), then the newest by step and by the .k of a retaken name; the rest go,
// incomplete ones of killed saves included. A failure here costs disk space, not a checkpoint.
void prune(const std::string& dir, const std::string& name, const std::optional<std::string>& previous, int keep) {
  struct Other {
    bool previous;
    uint64_t step, k;
    fs::path path;
  };
  std::error_code ec;
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
}

// One phase of a save on every rank: `work` (which may fail with a UserError), then the ranks tell
// each other how it went. Every rank returns every rank's result, or every rank throws: the rank
// that failed its own error, the others an error naming it (and its file: the message names it).
std::vector<std::string> agree(const SaveGroup& group, const std::string& dir, const std::function<std::string()>& work) {
  std::string mine;
  std::exception_ptr error;
  try {
    mine = "1" + work();
  } catch (const support::UserError& e) {
    mine = std::string("0") + e.what();
    error = std::current_exception();
  }
  std::vector<std::string> all = group.exchange ? group.exchange(mine) : std::vector<std::string>{mine};
  if (error) std::rethrow_exception(error);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].empty() || all[r][0] != '1')
      fail("save_sharded {}: rank {} failed: {}", dir, r, all[r].empty() ? "(no message)" : all[r].substr(1));
  for (std::string& p : all) p.erase(0, 1);
  return all;
}

// The valid box of device d's piece (its padding left out); the piece's own shape for a device
// whose piece is a placeholder (off a maximal mesh's device).
std::vector<int64_t> valid_extent(const ShardedBuffer& b, const ir::Mesh& mesh, int64_t d) {
  const Literal& piece = (*b.pieces)[size_t(d)];
  bool on_mesh = mesh.axes.empty();
  for (int64_t p = 0; !on_mesh && p < mesh.num_devices(); ++p) on_mesh = spmd::device_at(mesh, p) == d;
  if (!on_mesh || spmd::is_maximal(mesh)) return piece.shape();
  PieceBox box = piece_box(b.type, b.sharding, mesh, d);
  return box.shape == piece.shape() ? box.extent : piece.shape();
}

}  // namespace

SaveGroup save_group(const Session& session) {
  SaveGroup g;
  g.rank = session.rank();
  if (!session.over_mpi()) return g;
  g.owns = [&session](int64_t d) { return session.owns(d); };
  g.exchange = [&session](const std::string& payload) { return session.per_rank_bytes(payload, "checkpoint save"); };
  return g;
}

std::string save_sharded(const std::string& where, const std::vector<std::string>& names, const std::vector<ShardedBuffer>& buffers,
                         const ir::Mesh& mesh, int64_t step, const std::map<std::string, std::string>& metadata,
                         int keep, const SaveGroup& group) {
  const std::string dir = without_trailing_slash(where);
  TESSERA_CHECK(names.size() == buffers.size(), "{} names for {} buffers", names.size(), buffers.size());
  if (step < 0) fail("save_sharded {}: step {} is negative", dir, step);
  if (keep < 1) fail("save_sharded {}: keep {} checkpoints: at least the new one is kept", dir, keep);
  for (size_t i = 0; i < names.size(); ++i) {
    if (buffers[i].donated()) fail("save_sharded: \"{}\" was donated", names[i]);
    // A checkpoint holds arrays, not partial sums: each device's file would hold its summand.
    if (!buffers[i].sharding.unreduced.empty())
      fail("save_sharded: \"{}\" is unreduced (each device holds a partial sum); reshard it to a layout "
           "without unreduced axes, or fetch it, before saving", names[i]);
  }
  size_t devices = buffers.empty() ? 0 : buffers[0].pieces->size();
  for (const auto& b : buffers) TESSERA_CHECK(b.pieces->size() == devices, "{} pieces, expected {}", b.pieces->size(), devices);
  const bool leader = group.rank == 0;
  auto owns = [&](size_t d) { return !group.owns || group.owns(int64_t(d)); };

  // 1. Rank 0: DIR made if missing (a clear error when part of it is a file), then a fresh
  // step-<N>, whose name every rank learns.
  std::optional<std::string> previous;  // what `latest` named before this save
  std::string name = agree(group, dir, [&]() -> std::string {
    if (!leader) return "";
    std::error_code ec;
    fs::create_directories(dir, ec);
    bool is_dir = false;
    if (ec || !exists(dir, &is_dir) || !is_dir)
      fail("{}: cannot create the checkpoint directory: {}", dir, ec ? ec.message() : std::strerror(ENOTDIR));
    if (exists(dir + "/latest")) {
      try {
        previous = latest_name(dir);
      } catch (const support::UserError&) {  // an unreadable pointer is replaced; nothing to keep
      }
    }
    std::string n = fmt::format("step-{}", step);
    for (int k = 2; !make_directory(dir + "/" + n); ++k) n = fmt::format("step-{}.{}", step, k);
    return n;
  })[0];
  const std::string path = dir + "/" + name;

  bool switched = false;
  try {
    // 2. Every rank: the files of its devices, from the pieces it holds; their names made durable.
    std::vector<std::string> written = agree(group, dir, [&] {
      json files = json::array();
      for (size_t d = 0; d < devices; ++d) {
        if (!owns(d)) continue;
        std::vector<std::pair<std::string, const Literal*>> pieces;
        json crcs = json::array();
        for (size_t i = 0; i < names.size(); ++i) {
          const Literal& piece = (*buffers[i].pieces)[d];
          pieces.push_back({names[i], &piece});
          crcs.push_back(piece_crc32c(piece, valid_extent(buffers[i], mesh, int64_t(d))));
        }
        std::string file = fmt::format("device-{}.safetensors", d);
        Image image = safetensors_image(pieces, {{"device", std::to_string(d)}}, path + "/" + file);
        test_delay();
        FileDigest digest = write_file_atomically(path + "/" + file, image.parts(), /*sync_parent=*/false);
        files.push_back({{"device", d}, {"name", file}, {"bytes", digest.bytes}, {"crc32c", digest.crc32c}, {"pieces", crcs}});
      }
      if (!files.empty()) sync_directory(path);  // the device files' names are durable before the index lists them
      return files.dump();
    });

    // 3. Rank 0: index.json (each file's size and checksums), the switch, the pruning.
    agree(group, dir, [&]() -> std::string {
      if (!leader) return "";
      json index = {{"format", "tessera sharded checkpoint"}, {"version", kVersion}, {"step", step},
                    {"mesh", {{"name", mesh.name}, {"axes", json::array()}}}, {"devices", devices},
                    {"files", json::array()}, {"arrays", json::array()}};
      for (const auto& a : mesh.axes) index["mesh"]["axes"].push_back({a.name, a.size});
      index["mesh"]["device_ids"] = mesh.device_ids;
      if (!metadata.empty()) index["metadata"] = metadata;
      for (size_t i = 0; i < names.size(); ++i)
        index["arrays"].push_back({{"name", names[i]}, {"dtype", dtype_of(buffers[i].type.element)},
                                   {"shape", buffers[i].type.shape}, {"sharding", sharding_json(buffers[i].sharding)}});
      std::vector<json> files(devices);
      for (const std::string& rank_files : written)
        for (json& f : json::parse(rank_files)) {
          size_t d = f["device"].get<size_t>();
          TESSERA_CHECK(d < devices && files[d].is_null(), "device file {} written twice or out of range", d);
          f.erase("device");
          files[d] = std::move(f);
        }
      for (size_t d = 0; d < devices; ++d) {
        TESSERA_CHECK(!files[d].is_null(), "no rank wrote device {}'s file", d);
        index["files"].push_back(std::move(files[d]));
      }
      std::string text = index.dump(2) + "\n";
      test_delay();
      write_file_atomically(path + "/index.json", {text}, /*sync_parent=*/false);
      sync_directory(path);
      sync_directory(dir);  // step-<N> itself
      std::string pointer = name + "\n";
      test_delay();
      write_file_atomically(dir + "/latest", {pointer}, /*sync_parent=*/false);
      switched = true;
      sync_directory(dir);
      prune(dir, name, previous, keep);
      return "";
    });
  } catch (...) {
    // Before the switch the new directory is garbage: rank 0 removes it (best effort; the next
    // save removes what is left). After it, `latest` may already name it: keep it.
    std::error_code ec;
    if (leader && !switched) fs::remove_all(path, ec);
    throw;
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

}  // namespace tessera::runtime
