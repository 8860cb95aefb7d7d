// Literals on the wire, the ranks of each stage, and the shard-by-shard transfer plan between
// stages on different ranks (ranks.h).
#include "mpmd/ranks.h"

#include <algorithm>
#include <map>

#include "comm/mpi_wire.h"
#include "runtime/layout.h"
#include "spmd/mesh_math.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::mpmd {

std::vector<std::byte> encode_literal(const ir::Literal& x) {
  std::vector<std::byte> out;
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(x.element()));
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(x.shape().size()));
  for (int64_t d : x.shape()) comm::wire::put<int64_t>(out, d);
  comm::wire::put_bytes(out, x.bytes());
  return out;
}

ir::Literal decode_literal(std::span<const std::byte> in) {
  comm::wire::Reader r(in);
  const auto element = static_cast<ir::ElementType>(r.get<uint32_t>());
  std::vector<int64_t> shape(r.get<uint32_t>());
  for (int64_t& d : shape) d = r.get<int64_t>();
  ir::Literal x(ir::Type(element, std::move(shape)));
  std::span<const std::byte> bytes = r.get_bytes();
  TESSERA_CHECK(bytes.size() == x.bytes().size() && r.done(), "a transferred {} holds {} bytes, not {}",
                ir::to_string(x.type()), bytes.size(), x.bytes().size());
  std::copy(bytes.begin(), bytes.end(), x.bytes().begin());
  return x;
}

std::unique_ptr<runtime::Session> Ranks::stage_session(int first, int count, int64_t, const runtime::SessionOptions&) {
  support::fail("pipeline stages on ranks: a stage on ranks {}..{} needs MPI ranks; these ranks run in one process",
                first, first + count - 1);
}

StageRanks stage_ranks(int64_t stage, int64_t stages, int ranks) {
  if (ranks < 1 || stages < 1 || (stages % ranks != 0 && ranks % stages != 0))
    support::fail("pipeline stages on ranks: {} stages do not split evenly over {} ranks (the ranks must divide the "
                  "stages, or be a multiple of them)",
                  stages, ranks);
  if (stage < 0 || stage >= stages) support::fail("pipeline stages on ranks: no stage {} of {}", stage, stages);
  if (stages % ranks == 0) return {static_cast<int>(stage * ranks / stages), 1};
  const auto per = static_cast<int>(ranks / stages);
  return {static_cast<int>(stage) * per, per};
}

int64_t PiecePart::elements() const { return support::product(extent); }

runtime::PieceBox Placement::box(const ir::Type& type, int64_t device) const {
  if (mesh == nullptr) return {std::vector<int64_t>(type.shape.size(), 0), type.shape, type.shape};
  return runtime::piece_box(type, sharding, *mesh, device);
}

std::vector<PieceMessage> transfer_messages(const ir::Type& type, const Placement& from, const Placement& to) {
  // The distinct source boxes, in the order of their first holder (runtime::holders' order), each
  // with every device holding it.
  struct Source {
    runtime::PieceBox box;
    std::vector<int64_t> devices;
  };
  std::vector<Source> sources;
  if (from.mesh == nullptr) {
    sources.push_back({from.box(type, 0), {0}});
  } else {
    std::map<std::pair<std::vector<int64_t>, int64_t>, size_t> index;
    for (int64_t p = 0; p < from.mesh->num_devices(); ++p) {
      const int64_t d = spmd::device_at(*from.mesh, p);
      const int64_t u = from.sharding.unreduced.empty() ? 0 : spmd::shard_index(*from.mesh, p, from.sharding.unreduced);
      runtime::PieceBox box = from.box(type, d);
      auto [it, fresh] = index.try_emplace({box.start, u}, sources.size());
      if (fresh) sources.push_back({std::move(box), {}});
      sources[it->second].devices.push_back(d);
    }
    std::sort(sources.begin(), sources.end(),
              [](const Source& a, const Source& b) { return a.devices.front() < b.devices.front(); });
  }
  const size_t rank = type.shape.size();
  std::vector<PieceMessage> out;
  for (int64_t e = 0; e < to.devices(); ++e) {
    const runtime::PieceBox dst = to.box(type, e);
    const size_t base = out.size();  // this piece's messages: one per rank of the source stage
    for (int r = 0; r < from.ranks.count; ++r) out.push_back({from.ranks.first + r, to.rank_of(e), e, {}});
    for (const Source& src : sources) {
      PiecePart part;
      part.at_src.resize(rank);
      part.at_dst.resize(rank);
      part.extent.resize(rank);
      for (size_t i = 0; i < rank; ++i) {
        int64_t lo = std::max(src.box.start[i], dst.start[i]);
        int64_t hi = std::min(src.box.start[i] + src.box.extent[i], dst.start[i] + dst.extent[i]);
        part.extent[i] = std::max<int64_t>(hi - lo, 0);
        part.at_src[i] = lo - src.box.start[i];
        part.at_dst[i] = lo - dst.start[i];
      }
      if (part.elements() == 0) continue;
      part.source_device = src.devices[static_cast<size_t>(e) % src.devices.size()];
      for (int64_t d : src.devices)
        if (from.rank_of(d) == to.rank_of(e)) {
          part.source_device = d;
          break;
        }
      const auto sender = static_cast<size_t>(from.rank_of(part.source_device) - from.ranks.first);
      out[base + sender].parts.push_back(std::move(part));
    }
  }
  return out;
}

runtime::ShardedBuffer reshard(const runtime::ShardedBuffer& from, const ir::Mesh* from_mesh, const ir::Sharding& to,
                               const ir::Mesh* to_mesh, int64_t& bytes, const runtime::Session* on) {
  TESSERA_CHECK(!from.donated(), "reshard of a donated buffer");
  if (from.pieces->size() == 1) from_mesh = nullptr;
  if (to_mesh == nullptr) on = nullptr;
  // In the process every device is on one rank; with `on`, device d is on the session's rank d / local.
  const StageRanks ranks{0, on ? static_cast<int>(on->num_ranks()) : 1};
  runtime::ShardedBuffer out;
  out.type = from.type;
  out.sharding = to_mesh ? to : ir::Sharding{};
  const Placement source{from_mesh, from.sharding, ranks}, dest{to_mesh, out.sharding, ranks};
  out.pieces = std::make_shared<std::vector<ir::Literal>>(static_cast<size_t>(dest.devices()));
  for (int64_t d = 0; d < dest.devices(); ++d)
    if (!on || on->owns(d))
      (*out.pieces)[static_cast<size_t>(d)] = ir::Literal(ir::Type(from.type.element, dest.box(from.type, d).shape));
  const auto element = static_cast<int64_t>(ir::info(from.type.element).bytes);
  for (const PieceMessage& m : transfer_messages(from.type, source, dest)) {
    if (on && !on->owns(m.piece)) continue;  // another rank's piece
    for (const PiecePart& part : m.parts) {
      TESSERA_CHECK(!on || !from_mesh || on->owns(part.source_device),
                    "reshard on rank {}: piece {} needs device {}'s part, held by another rank only", on->rank(),
                    m.piece, part.source_device);
      runtime::copy_box((*from.pieces)[static_cast<size_t>(part.source_device)], part.at_src,
                        (*out.pieces)[static_cast<size_t>(m.piece)], part.at_dst, part.extent);
      bytes += part.elements() * element;
    }
  }
  return out;
}

std::vector<std::byte> pack_parts(const PieceMessage& m, const std::vector<ir::Literal>& source_pieces) {
  std::vector<std::byte> out;
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(m.parts.size()));
  for (const PiecePart& part : m.parts) {
    const ir::Literal& source = source_pieces.at(static_cast<size_t>(part.source_device));
    comm::wire::put<uint32_t>(out, static_cast<uint32_t>(part.extent.size()));
    for (size_t i = 0; i < part.extent.size(); ++i) {
      comm::wire::put<int64_t>(out, part.at_dst[i]);
      comm::wire::put<int64_t>(out, part.extent[i]);
    }
    ir::Literal box(ir::Type(source.element(), part.extent));
    runtime::copy_box(source, part.at_src, box, std::vector<int64_t>(part.extent.size(), 0), part.extent);
    comm::wire::put_bytes(out, box.bytes());
  }
  return out;
}

int64_t unpack_parts(std::span<const std::byte> message, ir::Literal& piece) {
  comm::wire::Reader r(message);
  int64_t bytes = 0;
  const size_t rank = piece.shape().size();
  for (uint32_t k = r.get<uint32_t>(); k > 0; --k) {
    if (r.get<uint32_t>() != rank)
      support::fail("a transferred part has another rank than its {} piece", ir::to_string(piece.type()));
    std::vector<int64_t> at(rank), extent(rank);
    for (size_t i = 0; i < rank; ++i) {
      at[i] = r.get<int64_t>();
      extent[i] = r.get<int64_t>();
      if (at[i] < 0 || extent[i] < 0 || at[i] + extent[i] > piece.shape()[i])
        support::fail("a transferred part [{}, +{}) leaves its {} piece in dimension {}", at[i], extent[i],
                      ir::to_string(piece.type()), i);
    }
    std::span<const std::byte> data = r.get_bytes();
    ir::Literal box(ir::Type(piece.element(), extent));
    if (data.size() != box.bytes().size())
      support::fail("a transferred part of {} elements brings {} bytes", box.num_elements(), data.size());
    std::copy(data.begin(), data.end(), box.bytes().begin());
    runtime::copy_box(box, std::vector<int64_t>(rank, 0), piece, at, extent);
    bytes += static_cast<int64_t>(data.size());
  }
  if (!r.done()) support::fail("a transfer message has {} bytes after its parts", r.rest().size());
  return bytes;
}

}  // namespace tessera::mpmd
