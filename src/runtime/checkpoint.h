// Checkpoints as safetensors: named arrays in one file (an 8-byte little-endian header length, a
// JSON header of name -> {dtype, shape, data_offsets}, then the bytes), or a sharded checkpoint of
// one file per device whose index records every array's global shape and sharding. Each process
// writes the files of the devices it owns (over MPI, each rank its own: nothing is gathered), and
// a reader reads any box of any array from the byte ranges of the device files that overlap it, so
// a checkpoint loads piece by piece under another plan or device count, each rank reading only the
// bytes of its own pieces.
//
// A sharded checkpoint directory (`--save DIR`) holds complete checkpoints and a pointer:
//   DIR/latest                        the name of the newest complete checkpoint, e.g. "step-6\n"
//   DIR/step-6/device-<d>.safetensors device d's pieces (padded where a dimension is uneven)
//   DIR/step-6/index.json             {"format", "version": 3, "step", "mesh", "devices",
//                                      "files": [{name, bytes, crc32c, pieces}], "arrays": [{name,
//                                      dtype, shape, sharding}]}
// where "pieces" holds, per array, the CRC-32C of the file's piece of it without its padding.
// A save never touches the checkpoint `latest` names until the new one is complete, so a save
// that is killed (any rank, at any moment) or fails (a full disk) leaves the previous one loadable:
//   1. rank 0: mkdir DIR/step-<N> (step-<N>.2, .3, ... when the name is taken); the ranks learn it;
//   2. each rank: the files of its devices, written as durable_file.h says (a temporary name,
//      fsync, rename), then step-<N> fsynced; the ranks send rank 0 each file's size and CRC-32Cs
//      (and learn whether every rank succeeded: a failure on one fails the save on all, naming
//      the rank and its file, and rank 0 removes step-<N>);
//   3. rank 0: index.json written the same way, step-<N> and DIR fsynced; latest.tmp written and
//      fsynced, renamed over DIR/latest, DIR fsynced: the switch;
//   4. rank 0: other step-* directories removed, except the `keep` - 1 newest complete ones (by
//      step number; with the default keep = 2, the previous checkpoint); then every rank learns
//      the save's outcome. Over MPI, DIR must be one file system all ranks see.
// Loading follows `latest` (or takes a step directory, or the version-1 layout of index.json and
// device files directly in DIR), validates index.json's structure, and for each file it touches
// checks the size against the index and the safetensors header against the index's shapes; the
// bytes it reads are checked against the CRC-32C of each piece it reads whole (version 3) or of
// the whole file, which a version-2 checkpoint's reader reads at once. A bad file or field is a
// UserError naming it. Bytes of files no piece needs are never read (nor checked).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/literal.h"
#include "runtime/session.h"

namespace tessera::runtime {

using NamedArrays = std::vector<std::pair<std::string, ir::Literal>>;

// Written atomically (durable_file.h): `path` holds its old content or the new, never a part.
void save_safetensors(const std::string& path, const NamedArrays& arrays,
                      const std::map<std::string, std::string>& metadata = {});
NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);
// The same in memory: a safetensors file's bytes (`what` names them in messages), and the bytes
// save_safetensors writes. The readers are fuzzed (fuzz/README.md) through these.
NamedArrays parse_safetensors(std::string_view bytes, const std::string& what,
                              std::map<std::string, std::string>* metadata = nullptr);
std::string to_safetensors(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata = {});

// The processes of a save: which device files this one writes, and how they agree. The default
// is one process writing every device's file.
struct SaveGroup {
  int64_t rank = 0;                          // rank 0 makes step-<N>, writes index.json and `latest`
  std::function<bool(int64_t device)> owns;  // the devices whose files this process writes; null: all
  // Every rank's `payload` in rank order (every rank calls it as often); null: one process.
  std::function<std::vector<std::string>(const std::string& payload)> exchange;
};
// A session's: over MPI each rank writes its own devices' files and they agree through
// Session::per_rank_bytes (so a rank that died or hangs ends the save on the others, named, within
// the session's timeout); on host devices, the default.
SaveGroup save_group(const Session& session);

// Saves a new checkpoint of `step` into `dir` (created if missing) as above and returns its
// directory; `buffers[i]` is named `names[i]`; `mesh` is the mesh their shardings name. Each
// process writes the pieces it holds of the devices `group` says it owns (every rank calls this,
// with the same names, shardings and step). `metadata` (e.g. the model's configuration) goes into
// index.json as "metadata": {key: string}.
std::string save_sharded(const std::string& dir, const std::vector<std::string>& names,
                         const std::vector<ShardedBuffer>& buffers, const ir::Mesh& mesh, int64_t step,
                         const std::map<std::string, std::string>& metadata = {}, int keep = 2,
                         const SaveGroup& group = {});

// What a reader has read: the bytes of array data (the boxes asked for, and for a version-2
// checkpoint whole files), of the safetensors headers, the files opened, and the pieces whose
// CRC-32C it checked.
struct ReadStats {
  int64_t data_bytes = 0, header_bytes = 0, files = 0, checked_pieces = 0;
};

// A file's bytes, for a reader: its size, and `length` bytes at `offset` into `into` (a UserError
// naming the file when it cannot). The default reader's opens the files on the file system.
struct CheckpointFiles {
  virtual ~CheckpointFiles() = default;
  virtual uint64_t size(const std::string& name) = 0;
  virtual void read(const std::string& name, uint64_t offset, uint64_t length, char* into) = 0;
};

// Reads boxes of a sharded checkpoint's arrays, each from the byte ranges (pread) of the source
// pieces that overlap it, whatever plan and device count wrote it: index.json is read and checked
// when it opens, a device file (its size and header) when a box first needs it.
class CheckpointReader {
 public:
  // The checkpoint `dir` holds (or is): checkpoint_directory(dir).
  explicit CheckpointReader(const std::string& dir);
  // The same over `files` (names relative to `dir`, which names them in messages).
  CheckpointReader(std::string_view index_text, const std::string& dir, std::shared_ptr<CheckpointFiles> files);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;

  const std::string& directory() const;
  const std::map<std::string, std::string>& metadata() const;  // index.json's "metadata"
  std::vector<std::string> names() const;                      // the arrays, in saved order
  // The array's global type; a UserError naming the checkpoint when it has no such array.
  const ir::Type& type(const std::string& name) const;
  bool has(const std::string& name) const;
  // Which replica to read where several source devices hold the same box: the first that
  // `prefer` accepts (e.g. this rank's own devices' files), else the lowest.
  void prefer(std::function<bool(int64_t source_device)> prefer);
  // The box [start, start + extent) of array `name`: a Literal of shape `extent`.
  ir::Literal read(const std::string& name, const std::vector<int64_t>& start, const std::vector<int64_t>& extent);
  ir::Literal read_whole(const std::string& name);
  const ReadStats& stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The whole arrays of the checkpoint `dir` holds (or is), in the order they were saved (a
// CheckpointReader's read_whole); with `metadata`, index.json's "metadata" (empty when the
// checkpoint has none).
NamedArrays load_sharded(const std::string& dir, std::map<std::string, std::string>* metadata = nullptr);
// load_sharded without the file system: `index_text` is the index.json of checkpoint directory
// `dir` (named in messages), and read_file("device-<d>.safetensors") returns a device file's bytes
// (or throws a UserError), read at most once per file. The fuzzer calls it.
NamedArrays load_sharded_from(std::string_view index_text, const std::string& dir,
                              const std::function<std::string(const std::string& name)>& read_file,
                              std::map<std::string, std::string>* metadata = nullptr);
// The directory of the checkpoint load_sharded(dir) reads: the one `latest` names, or dir itself.
std::string checkpoint_directory(const std::string& dir);

}  // namespace tessera::runtime
