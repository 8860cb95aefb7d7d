// Literals on the wire and the owner of each stage (ranks.h).
#include "mpmd/ranks.h"

#include <algorithm>

#include "comm/mpi_wire.h"
#include "support/error.h"

namespace tessera::mpmd {

void encode_literal(std::vector<std::byte>& out, const ir::Literal& x) {
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(x.element()));
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(x.shape().size()));
  for (int64_t d : x.shape()) comm::wire::put<int64_t>(out, d);
  comm::wire::put_bytes(out, x.bytes());
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

int owner_rank(int64_t stage, int64_t stages, int ranks) {
  if (ranks < 1 || stages < 1 || stages % ranks != 0)
    support::fail("pipeline stages on ranks: {} stages do not split evenly over {} ranks (the ranks must divide the "
                  "stages)",
                  stages, ranks);
  if (stage < 0 || stage >= stages) support::fail("pipeline stages on ranks: no stage {} of {}", stage, stages);
  return static_cast<int>(stage * ranks / stages);
}

}  // namespace tessera::mpmd
