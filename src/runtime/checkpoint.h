// Checkpoints as safetensors: named arrays in one file (an 8-byte little-endian header length, a
// JSON header of name -> {dtype, shape, data_offsets}, then the bytes), or a sharded checkpoint of
// one file per device whose metadata records every array's global shape and sharding. A sharded
// checkpoint loads as whole arrays, so it can be staged under a different plan or device count
// (resharding on load).
//
// A sharded checkpoint directory (`--save DIR`) holds complete checkpoints and a pointer:
//   DIR/latest                        the name of the newest complete checkpoint, e.g. "step-6\n"
//   DIR/step-6/device-<d>.safetensors device d's pieces
//   DIR/step-6/index.json             {"format", "version": 2, "step", "mesh", "devices",
//                                      "files": [{name, bytes, crc32c}], "arrays": [{name, dtype,
//                                      shape, sharding}]}
// A save never touches the checkpoint `latest` names until the new one is complete, so a save
// that is killed or fails (a full disk) leaves the previous one loadable:
//   1. mkdir DIR/step-<N> (step-<N>.2, .3, ... when the name is taken);
//   2. each device file, then index.json (with each file's size and CRC-32C), written as
//      durable_file.h says (a temporary name, fsync, rename); fsync step-<N>, then DIR;
//   3. latest.tmp written and fsynced, renamed over DIR/latest, DIR fsynced: the switch;
//   4. other step-* directories removed, except the `keep` - 1 newest complete ones (by step
//      number; with the default keep = 2, the previous checkpoint).
// Loading follows `latest` (or takes a step directory, or the version-1 layout of index.json and
// device files directly in DIR, which has no sizes or checksums to verify), checks each file's
// size and CRC-32C before use, and validates index.json's structure: a bad file or field is a
// UserError naming it.
#pragma once

#include <functional>
#include <map>
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

// Saves a new checkpoint of `step` into `dir` (created if missing) as above and returns its
// directory; `buffers[i]` is named `names[i]`; `mesh` is the mesh their shardings name.
// `metadata` (e.g. the model's configuration) goes into index.json as "metadata": {key: string}.
std::string save_sharded(const std::string& dir, const std::vector<std::string>& names,
                         const std::vector<ShardedBuffer>& buffers, const ir::Mesh& mesh, int64_t step,
                         const std::map<std::string, std::string>& metadata = {}, int keep = 2);
// The whole arrays of the checkpoint `dir` holds (or is), in the order they were saved; with
// `metadata`, index.json's "metadata" (empty when the checkpoint has none).
NamedArrays load_sharded(const std::string& dir, std::map<std::string, std::string>* metadata = nullptr);
// load_sharded without the file system: `index_text` is the index.json of checkpoint directory
// `dir` (named in messages), and read_file("device-<d>.safetensors") returns a device file's bytes
// (or throws a UserError). load_sharded is this over the files; the fuzzer calls it directly.
NamedArrays load_sharded_from(std::string_view index_text, const std::string& dir,
                              const std::function<std::string(const std::string& name)>& read_file,
                              std::map<std::string, std::string>* metadata = nullptr);
// The directory of the checkpoint load_sharded(dir) reads: the one `latest` names, or dir itself.
std::string checkpoint_directory(const std::string& dir);

}  // namespace tessera::runtime
