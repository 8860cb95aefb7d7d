// The piece-wise reader of sharded checkpoints (checkpoint.h): index.json parsed and checked once,
// then any box of any array read from the byte ranges of the source pieces that overlap it. For
// each source box (a distinct piece of the array under the sharding that wrote it) the box asked
// for is intersected with it; the intersection's bytes are the runs for_each_run gives inside the
// stored (padded) piece, read with pread, adjacent runs merged into one read. A device file is
// opened, sized and its header checked the first time a box needs it. A version-1 or -2
// checkpoint's files are read whole at first use (version 2: checked against the file's CRC-32C),
// since only whole files carry a checksum there. load_sharded is the reader asked for whole arrays.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "runtime/checkpoint.h"
#include "runtime/checkpoint_format.h"
#include "runtime/layout.h"
#include "spmd/mesh_math.h"
#include "support/durable_file.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::runtime {

using namespace ckpt;
using ir::Literal;
using support::fail;

namespace {

// Device files on the file system, kept open while the reader lives.
class DiskFiles final : public CheckpointFiles {
 public:
  explicit DiskFiles(std::string dir) : dir_(std::move(dir)) {}
  ~DiskFiles() override {
    for (auto& [name, fd] : fds_) ::close(fd);
  }
  uint64_t size(const std::string& name) override {
    struct stat st;
    if (::fstat(fd(name), &st) != 0) fail("{}/{}: cannot read the file: {}", dir_, name, std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail("{}/{}: cannot read the file: it is a directory", dir_, name);
    return uint64_t(st.st_size);
  }
  void read(const std::string& name, uint64_t offset, uint64_t length, char* into) override {
    int f = fd(name);
    while (length > 0) {
      ssize_t r = ::pread(f, into, length, off_t(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail("{}/{}: cannot read the file: {}", dir_, name, std::strerror(errno));
      if (r == 0) fail("{}/{}: the file ends before byte {} (changed while it was read?)", dir_, name, offset + length);
      into += r, offset += uint64_t(r), length -= uint64_t(r);
    }
  }

 private:
  int fd(const std::string& name) {
    auto it = fds_.find(name);
    if (it != fds_.end()) return it->second;
    std::string path = dir_ + "/" + name;
    int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f < 0) fail("{}: cannot read the file: {}", path, std::strerror(errno));
    return fds_[name] = f;
  }
  std::string dir_;
  std::map<std::string, int> fds_;
};

// Whole files from a function (load_sharded_from's read_file), each fetched once.
class FunctionFiles final : public CheckpointFiles {
 public:
  explicit FunctionFiles(const std::function<std::string(const std::string&)>& read_file) : read_file_(read_file) {}
  uint64_t size(const std::string& name) override { return bytes(name).size(); }
  void read(const std::string& name, uint64_t offset, uint64_t length, char* into) override {
    const std::string& b = bytes(name);
    TESSERA_CHECK(offset <= b.size() && length <= b.size() - offset, "read past the end of {}", name);
    std::memcpy(into, b.data() + offset, length);
  }

 private:
  const std::string& bytes(const std::string& name) {
    auto it = files_.find(name);
    if (it == files_.end()) it = files_.emplace(name, read_file_(name)).first;
    return it->second;
  }
  const std::function<std::string(const std::string&)>& read_file_;
  std::map<std::string, std::string> files_;
};

// A distinct piece of an array under the sharding that wrote it: its valid box of the whole
// array, and the devices holding it (replicas), ascending.
struct SourceBox {
  std::vector<int64_t> start, extent;
  std::vector<int64_t> devices;
};

struct SourceArray {
  std::string name;
  ir::Type global;
  std::vector<int64_t> local;  // the stored piece's shape (padded)
  std::vector<SourceBox> boxes;
};

struct ListedFile {  // a "files" entry of index.json (version 2 and later)
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
  std::vector<uint32_t> pieces;  // version 3: per array
};

struct OpenFile {
  uint64_t data_offset = 0;             // 8 + the header's length
  std::vector<HeaderEntry> entries;     // per array of the index, in its order
  std::optional<std::string> whole;     // versions 1 and 2: the file's bytes
};

}  // namespace

struct CheckpointReader::State {
  std::string dir, index_file;
  int64_t version = 1;
  size_t devices = 0;
  std::map<std::string, std::string> metadata;
  std::vector<SourceArray> arrays;
  std::map<std::string, size_t> by_name;
  std::vector<ListedFile> listed;  // per device; empty for version 1
  std::map<int64_t, OpenFile> open;
  std::shared_ptr<CheckpointFiles> io;
  std::function<bool(int64_t)> prefer;
  ReadStats stats;

  std::string file_name(int64_t d) const { return fmt::format("device-{}.safetensors", d); }
  std::string path(int64_t d) const { return dir + "/" + file_name(d); }
  void parse_index(std::string_view index_text);
  OpenFile& file(int64_t d);
  void read_bytes(int64_t d, OpenFile& f, uint64_t offset, uint64_t length, char* into);
};

void CheckpointReader::State::parse_index(std::string_view index_text) {
  State& s = *this;
  const std::string& index_file = s.index_file;
  json index = parse_json(index_text, index_file, "the index");
  Field root{index, &index_file, ""};
  if (!index.is_object()) root.wrong("an object");
  s.version = root.has("version") ? root["version"].integer(1, INT64_MAX) : 1;
  if (s.version > kVersion) fail("{}: version {}, but this Tessera reads versions 1 to {}", index_file, s.version, kVersion);
  if (root.has("metadata")) {
    Field md = root["metadata"];
    if (!md.j.is_object()) md.wrong("an object of strings");
    for (const auto& [key, value] : md.j.items()) s.metadata[key] = md[key.c_str()].str();
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
  s.devices = static_cast<size_t>(root["devices"].integer(0, kMaxDevices));
  Field arrays = root["arrays"];
  const bool maximal = spmd::is_maximal(mesh);
  try {
    ir::validate(mesh);
    if (arrays.size() > 0 && (maximal ? mesh.device_ids[0] >= int64_t(s.devices) : mesh_devices > int64_t(s.devices)))
      fail("\"devices\" is {}, fewer than mesh @{} needs", s.devices, mesh.name);
  } catch (const support::UserError& e) {
    fail("{}: {}", index_file, e.what());
  }

  if (s.version >= 2) {
    Field files = root["files"];
    if (files.size() != s.devices) fail("{}: \"files\" lists {} files for {} devices", index_file, files.size(), s.devices);
    for (size_t d = 0; d < s.devices; ++d) {
      Field f = files[d];
      std::string name = s.file_name(int64_t(d));
      if (f["name"].str() != name) fail("{}: \"{}.name\" is {}, expected {}", index_file, f.path, f["name"].j.dump(), name);
      ListedFile l{uint64_t(f["bytes"].integer(0, INT64_MAX)), uint32_t(f["crc32c"].integer(0, UINT32_MAX)), {}};
      if (s.version >= 3) {
        for (int64_t crc : f["pieces"].integers(0, UINT32_MAX)) l.pieces.push_back(uint32_t(crc));
        if (l.pieces.size() != arrays.size())
          fail("{}: \"{}.pieces\" has {} checksums for {} arrays", index_file, f.path, l.pieces.size(), arrays.size());
      }
      s.listed.push_back(std::move(l));
    }
  }

  for (size_t i = 0, n = arrays.size(); i < n; ++i) {
    Field a = arrays[i];
    SourceArray src;
    src.name = a["name"].str();
    src.global = ir::Type(element_of(a["dtype"].str(), fmt::format("{}: \"{}\"", index_file, a.path)),
                          a["shape"].integers(0, INT64_MAX));
    checked_bytes(src.global.shape, src.global.element, fmt::format("{}: \"{}\"", index_file, src.name));
    ir::Sharding sharding = sharding_from(a["sharding"], mesh.name);
    if (sharding.dims.empty()) sharding.dims.resize(src.global.shape.size());  // [] is replicated too
    try {
      ir::validate(sharding, mesh, src.global, fmt::format("\"{}\"", src.name));
    } catch (const support::UserError& e) {
      fail("{}: {}", index_file, e.what());
    }
    if (!s.by_name.emplace(src.name, i).second) fail("{}: the array \"{}\" is listed twice", index_file, src.name);
    if (maximal || mesh.axes.empty()) {
      // Whole on one device; the other devices may hold placeholders.
      src.local = src.global.shape;
      src.boxes.push_back({std::vector<int64_t>(src.global.shape.size(), 0), src.global.shape,
                           {maximal ? mesh.device_ids[0] : 0}});
    } else {
      for (int64_t p = 0; p < mesh_devices; ++p) {
        int64_t d = spmd::device_at(mesh, p);
        if (d >= int64_t(s.devices)) fail("{}: mesh @{} names device {}, but \"devices\" is {}", index_file, mesh.name, d, s.devices);
        PieceBox box = piece_box(src.global, sharding, mesh, d);
        src.local = box.shape;
        auto same = std::find_if(src.boxes.begin(), src.boxes.end(), [&](const SourceBox& b) { return b.start == box.start; });
        if (same == src.boxes.end()) src.boxes.push_back({box.start, box.extent, {d}});
        else same->devices.push_back(d);
      }
      for (SourceBox& b : src.boxes) std::sort(b.devices.begin(), b.devices.end());
    }
    s.arrays.push_back(std::move(src));
  }
}

void CheckpointReader::State::read_bytes(int64_t d, OpenFile& f, uint64_t offset, uint64_t length, char* into) {
  if (f.whole) {
    std::memcpy(into, f.whole->data() + offset, length);
    return;
  }
  io->read(file_name(d), offset, length, into);
  stats.data_bytes += int64_t(length);
}

OpenFile& CheckpointReader::State::file(int64_t d) {
  if (auto it = open.find(d); it != open.end()) return it->second;
  const std::string name = file_name(d), where = path(d);
  uint64_t size = io->size(name);
  const ListedFile* l = listed.empty() ? nullptr : &listed[size_t(d)];
  if (l && size != l->bytes)
    fail("{}: {} bytes, but the index says {} (the file was cut short or changed)", where, size, l->bytes);
  ++stats.files;
  OpenFile f;
  std::string head;
  if (version < 3) {  // checked whole (version 2), then read from memory
    f.whole.emplace(size, '\0');
    io->read(name, 0, size, f.whole->data());
    stats.data_bytes += int64_t(size);
    if (l)
      if (uint32_t got = support::crc32c(*f.whole); got != l->crc32c)
        fail("{}: CRC-32C 0x{:08x}, but the index says 0x{:08x} (the file is corrupt)", where, got, l->crc32c);
    head = f.whole->substr(0, std::min<uint64_t>(size, 8));
  } else if (size >= 8) {
    head.resize(8);
    io->read(name, 0, 8, head.data());
    stats.header_bytes += 8;
  }
  if (size < 8) fail("{}: {} bytes, too short for a safetensors file", where, size);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(head[size_t(i)])) << (8 * i);
  if (n > size - 8) fail("{}: a header of {} bytes in a file of {}", where, n, size);
  std::string header;
  if (f.whole) {
    header = f.whole->substr(8, n);
  } else {
    header.resize(n);
    io->read(name, 8, n, header.data());
    stats.header_bytes += int64_t(n);
  }
  f.data_offset = 8 + n;
  std::vector<HeaderEntry> entries = parse_header(header, size - 8 - n, where, nullptr);
  for (const SourceArray& a : arrays) {
    auto e = std::find_if(entries.begin(), entries.end(), [&](const HeaderEntry& h) { return h.name == a.name; });
    if (e == entries.end()) fail("{} lacks \"{}\"", where, a.name);
    if (e->type != ir::Type(a.global.element, a.local))
      fail("{}: \"{}\" is {}, its sharding in the index makes its piece {}", where, a.name, ir::to_string(e->type),
           ir::to_string(ir::Type(a.global.element, a.local)));
    f.entries.push_back(*e);
  }
  return open.emplace(d, std::move(f)).first->second;
}

CheckpointReader::CheckpointReader(const std::string& where) : state_(std::make_unique<State>()) {
  state_->dir = checkpoint_directory(where);
  state_->index_file = state_->dir + "/index.json";
  state_->io = std::make_shared<DiskFiles>(state_->dir);
  state_->parse_index(support::read_file_bytes(state_->index_file));
}

CheckpointReader::CheckpointReader(std::string_view index_text, const std::string& dir,
                                   std::shared_ptr<CheckpointFiles> files)
    : state_(std::make_unique<State>()) {
  state_->dir = dir;
  state_->index_file = dir + "/index.json";
  state_->io = std::move(files);
  state_->parse_index(index_text);
}

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;

const std::string& CheckpointReader::directory() const { return state_->dir; }
const std::map<std::string, std::string>& CheckpointReader::metadata() const { return state_->metadata; }
const ReadStats& CheckpointReader::stats() const { return state_->stats; }
void CheckpointReader::prefer(std::function<bool(int64_t)> prefer) { state_->prefer = std::move(prefer); }
bool CheckpointReader::has(const std::string& name) const { return state_->by_name.count(name) > 0; }

std::vector<std::string> CheckpointReader::names() const {
  std::vector<std::string> out;
  for (const SourceArray& a : state_->arrays) out.push_back(a.name);
  return out;
}

const ir::Type& CheckpointReader::type(const std::string& name) const {
  auto it = state_->by_name.find(name);
  if (it == state_->by_name.end()) fail("{}: the checkpoint has no \"{}\"", state_->dir, name);
  return state_->arrays[it->second].global;
}

Literal CheckpointReader::read(const std::string& name, const std::vector<int64_t>& start,
                               const std::vector<int64_t>& extent) {
  State& s = *state_;
  const ir::Type& global = type(name);
  const size_t index = s.by_name.at(name);
  const SourceArray& a = s.arrays[index];
  const size_t rank = global.shape.size();
  bool inside = start.size() == rank && extent.size() == rank;
  for (size_t k = 0; inside && k < rank; ++k)
    inside = start[k] >= 0 && extent[k] >= 0 && (extent[k] == 0 || start[k] <= global.shape[k] - extent[k]);
  if (!inside)
    fail("{}: the box at [{}] of extent [{}] is not inside \"{}\" ({})", s.dir, support::join(start, ", "),
         support::join(extent, ", "), name, ir::to_string(global));
  // (An empty box may start past the end: the piece of a device an uneven dimension leaves none.)
  const int64_t element_bytes = ir::info(global.element).bytes;
  Literal out(ir::Type(global.element, extent));
  for (const SourceBox& box : a.boxes) {
    std::vector<int64_t> at(rank), within(rank), size(rank), to(rank);
    bool empty = false;
    for (size_t k = 0; k < rank; ++k) {
      int64_t lo = std::max(start[k], box.start[k]), hi = std::min(start[k] + extent[k], box.start[k] + box.extent[k]);
      empty |= hi <= lo;
      within[k] = lo - box.start[k], size[k] = hi - lo, to[k] = lo - start[k];
    }
    if (empty) continue;
    int64_t d = box.devices[0];
    if (s.prefer)
      for (int64_t r : box.devices)
        if (s.prefer(r)) {
          d = r;
          break;
        }
    OpenFile& f = s.file(d);
    const HeaderEntry& entry = f.entries[index];
    // The intersection's bytes, run after run: its own row-major layout.
    Literal part(ir::Type(global.element, size));
    char* into = reinterpret_cast<char*>(part.bytes().data());
    uint64_t pending_at = 0, pending = 0;  // a run not read yet, grown while the next one follows it
    auto flush = [&] {
      if (pending == 0) return;
      s.read_bytes(d, f, f.data_offset + entry.begin + pending_at, pending, into);
      into += pending;
      pending = 0;
    };
    for_each_run(a.local, within, size, element_bytes, [&](uint64_t offset, uint64_t length) {
      if (pending > 0 && pending_at + pending == offset) {
        pending += length;
        return;
      }
      flush();
      pending_at = offset, pending = length;
    });
    flush();
    if (size == box.extent && !s.listed.empty() && s.version >= 3) {  // the whole piece: its checksum
      std::string_view bytes(reinterpret_cast<const char*>(part.bytes().data()), part.bytes().size());
      if (uint32_t got = support::crc32c(bytes); got != s.listed[size_t(d)].pieces[index])
        fail("{}: CRC-32C 0x{:08x} of \"{}\", but the index says 0x{:08x} (the file is corrupt)", s.path(d), got, name,
             s.listed[size_t(d)].pieces[index]);
      ++s.stats.checked_pieces;
    }
    copy_box(part, std::vector<int64_t>(rank, 0), out, to, size);
  }
  return out;
}

Literal CheckpointReader::read_whole(const std::string& name) {
  const ir::Type& t = type(name);
  return read(name, std::vector<int64_t>(t.shape.size(), 0), t.shape);
}

NamedArrays load_sharded(const std::string& where, std::map<std::string, std::string>* metadata) {
  CheckpointReader reader(where);
  if (metadata) *metadata = reader.metadata();
  NamedArrays out;
  for (const std::string& name : reader.names()) out.push_back({name, reader.read_whole(name)});
  return out;
}

NamedArrays load_sharded_from(std::string_view index_text, const std::string& dir,
                              const std::function<std::string(const std::string& name)>& read_file,
                              std::map<std::string, std::string>* metadata) {
  CheckpointReader reader(index_text, dir, std::make_shared<FunctionFiles>(read_file));
  if (metadata) *metadata = reader.metadata();
  NamedArrays out;
  for (const std::string& name : reader.names()) out.push_back({name, reader.read_whole(name)});
  return out;
}

}  // namespace tessera::runtime
