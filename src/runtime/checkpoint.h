// Checkpoints as safetensors: named arrays in one file (an 8-byte little-endian header length, a
// JSON header of name -> {dtype, shape, data_offsets}, then the bytes), or one file per device with
// an index (`model.safetensors.index.json` style: name -> file) where each device file holds that
// device's pieces and its metadata records every array's global shape and sharding. A sharded
// checkpoint loads as whole arrays, so it can be staged under a different plan or device count
// (resharding on load).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "runtime/session.h"

namespace tessera::runtime {

using NamedArrays = std::vector<std::pair<std::string, ir::Literal>>;

void save_safetensors(const std::string& path, const NamedArrays& arrays,
                      const std::map<std::string, std::string>& metadata = {});
NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

// One file per device (`dir`/device-<d>.safetensors) plus `dir`/index.json; `buffers[i]` is named
// `names[i]`; `mesh` is the mesh their shardings name.
void save_sharded(const std::string& dir, const std::vector<std::string>& names, const std::vector<ShardedBuffer>& buffers,
                  const ir::Mesh& mesh);
// The whole arrays of a sharded checkpoint, in the order they were saved.
NamedArrays load_sharded(const std::string& dir);

}  // namespace tessera::runtime
