// The mesh of a manual computation (manual_mesh.h).
#include "ir/manual_mesh.h"

namespace tessera::ir {

const Mesh* manual_mesh(const Module& module, const Op& op) {
  const auto& in = op.attrs().get<ShardingList>("in_shardings");
  const auto& out = op.attrs().get<ShardingList>("out_shardings");
  const Mesh* first = nullptr;
  for (const ShardingList* list : {&in, &out})
    for (const Sharding& s : *list) {
      const Mesh& m = module.mesh(s.mesh);
      if (!m.axes.empty()) return &m;
      if (first == nullptr) first = &m;
    }
  return first;
}

}  // namespace tessera::ir
