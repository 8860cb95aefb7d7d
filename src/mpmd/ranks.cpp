// Literals on the wire, the ranks of each stage, the shard-by-shard transfer plan between stages
// and its messages, and LocalRanks: the messages of one process's stages to each other (ranks.h).
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

void LocalRanks::send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) {
  TESSERA_CHECK(to == 0, "a send to rank {} in one process", to);
  {
    std::lock_guard lock(mu_);
    if (run > newest_run_) {
      std::erase_if(slots_, [&](const auto& slot) { return slot.first.first < run; });
      newest_run_ = run;
    }
    slots_.insert_or_assign({run, key}, std::move(payload));
  }
  cv_.notify_all();
}

bool LocalRanks::take(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds wait,
                      std::vector<std::byte>& out) {
  TESSERA_CHECK(from == 0, "a receive from rank {} in one process", from);
  std::unique_lock lock(mu_);
  auto it = slots_.end();
  if (!cv_.wait_for(lock, wait, [&] { return (it = slots_.find({run, key})) != slots_.end(); })) return false;
  out = std::move(it->second);
  slots_.erase(it);
  return true;
}

ReceiveStatus Ranks::receive(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds timeout,
                             const std::atomic<bool>& aborted, std::vector<std::byte>& out) {
  constexpr std::chrono::milliseconds kSlice{20};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (aborted) return ReceiveStatus::kAborted;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ReceiveStatus::kTimedOut;
    if (take(from, run, key, std::min(left, kSlice), out)) return ReceiveStatus::kReceived;
  }
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
    const ir::Type type(source.element(), part.extent);  // the box, copied straight into the message
    const auto size = static_cast<size_t>(part.elements() * ir::info(type.element).bytes);
    comm::wire::put<uint64_t>(out, size);  // put_bytes' form
    out.resize(out.size() + size);
    ir::Literal box = ir::Literal::view(type, out.data() + out.size() - size);
    runtime::copy_box(source, part.at_src, box, std::vector<int64_t>(part.extent.size(), 0), part.extent);
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
    const ir::Type type(piece.element(), extent);
    if (data.size() != static_cast<size_t>(support::product(extent) * ir::info(type.element).bytes))
      support::fail("a transferred part of {} elements brings {} bytes", support::product(extent), data.size());
    // A view of the message's bytes, only read (copy_box's source).
    const ir::Literal box = ir::Literal::view(type, const_cast<std::byte*>(data.data()));
    runtime::copy_box(box, std::vector<int64_t>(rank, 0), piece, at, extent);
    bytes += static_cast<int64_t>(data.size());
  }
  if (!r.done()) support::fail("a transfer message has {} bytes after its parts", r.rest().size());
  return bytes;
}

}  // namespace tessera::mpmd
