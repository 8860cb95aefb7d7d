// The typed collectives of the base class, each a local computation over one Exchange: every
// device reads its peers' inputs and computes its own output, folding in group order. Backends
// with a faster way override them (host_communicator.cpp); the results must be the same bits.
#include "comm/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ir/element_traits.h"
#include "support/strings.h"

namespace tessera::comm {
namespace {

void check_size(std::string_view op, std::string_view what, size_t got, size_t want) {
  if (got != want)
    support::fail("{}: {} has {} bytes, expected {}", op, what, got, want);
}

}  // namespace

size_t index_in_group(std::string_view op, const Group& group, int64_t device) {
  auto it = std::find(group.begin(), group.end(), device);
  if (it == group.end())
    support::fail("{}: device {} is not in its group [{}]", op, device, support::join(group, ", "));
  return static_cast<size_t>(it - group.begin());
}

std::string describe(const MessageKey& key) {
  if (key.source < 0) return fmt::format("channel {}", key.channel);
  return fmt::format("channel {} from device {} to device {}", key.channel, key.source, key.target);
}

void Communicator::post(std::string_view op, const MessageKey&, std::span<const std::byte>) {
  support::fail("{}: this communicator has no one-sided messages; send and recv run on host devices "
                "and MPI ranks", op);
}

void Communicator::take(std::string_view op, const MessageKey&, std::span<std::byte>) {
  support::fail("{}: this communicator has no one-sided messages; send and recv run on host devices "
                "and MPI ranks", op);
}

void check_reducible(std::string_view op, ir::ElementType type, ReduceOp reduce) {
  if (ir::is_complex(type) && (reduce == ReduceOp::Max || reduce == ReduceOp::Min))
    support::fail("{}: max/min of complex numbers are not defined", op);
}

namespace {

// acc[i] = acc[i] (op) value[i] with the op fixed at compile time, so the loop has no branch on
// it and vectorizes where the element type allows.
template <typename E, ReduceOp Op>
void fold_loop(std::span<std::byte> acc, std::span<const std::byte> value) {
  using S = typename E::storage;
  using C = typename E::compute;
  auto* a = reinterpret_cast<S*>(acc.data());
  const auto* v = reinterpret_cast<const S*>(value.data());
  size_t n = acc.size() / sizeof(S);
  // Inputs from the MPI wire may sit at any byte offset: read those through an aligned copy.
  std::vector<S> aligned;
  if (reinterpret_cast<uintptr_t>(value.data()) % alignof(S) != 0) {
    aligned.resize(n);
    std::memcpy(aligned.data(), value.data(), n * sizeof(S));
    v = aligned.data();
  }
  for (size_t i = 0; i < n; ++i) {
    C x = E::load(a[i]), y = E::load(v[i]);
    C r;
    if constexpr (ir::is_complex_v<C>) {
      if constexpr (Op == ReduceOp::Sum) r = x + y;
      else if constexpr (Op == ReduceOp::Product) r = x * y;
      else support::fail("max/min of complex numbers are not defined");
    } else if constexpr (std::is_same_v<C, bool>) {
      r = (Op == ReduceOp::Sum || Op == ReduceOp::Max) ? (x || y) : (x && y);
    } else if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;  // wrap-around, without signed overflow
      if constexpr (Op == ReduceOp::Sum) r = static_cast<C>(static_cast<U>(x) + static_cast<U>(y));
      else if constexpr (Op == ReduceOp::Product) r = static_cast<C>(static_cast<U>(x) * static_cast<U>(y));
      else r = Op == ReduceOp::Max ? std::max(x, y) : std::min(x, y);
    } else {
      if constexpr (Op == ReduceOp::Sum) r = x + y;
      else if constexpr (Op == ReduceOp::Product) r = x * y;
      else if (x != x || y != y) r = x != x ? x : y;  // NaN wins, as in stablehlo.maximum
      else r = Op == ReduceOp::Max ? std::max(x, y) : std::min(x, y);
    }
    a[i] = E::store(r);
  }
}

}  // namespace

void reduce_into(ir::ElementType type, ReduceOp op, std::span<std::byte> acc,
                 std::span<const std::byte> value) {
  ir::visit_element(type, [&]<typename E>() {
    switch (op) {
      case ReduceOp::Sum: return fold_loop<E, ReduceOp::Sum>(acc, value);
      case ReduceOp::Product: return fold_loop<E, ReduceOp::Product>(acc, value);
      case ReduceOp::Max: return fold_loop<E, ReduceOp::Max>(acc, value);
      case ReduceOp::Min: return fold_loop<E, ReduceOp::Min>(acc, value);
    }
  });
}

void Communicator::count_exchange(std::string_view op, const Exchange& ex, size_t operand_bytes) {
  size_t received = 0;
  for (size_t m = 0; m < ex.members(); ++m)
    if (m != ex.my_index()) received += ex.input(m).size();
  count(op, ex.members(), operand_bytes, (ex.members() - 1) * ex.input(ex.my_index()).size(), received);
}

void Communicator::all_reduce(std::string_view op, const Group& group, ir::ElementType type,
                              ReduceOp reduce, std::span<const std::byte> in,
                              std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  check_reducible(op, type, reduce);
  auto ex = exchange(op, group, in);
  count_exchange(op, *ex, in.size());
  std::memcpy(out.data(), ex->input(0).data(), out.size());
  for (size_t m = 1; m < ex->members(); ++m) reduce_into(type, reduce, out, ex->input(m));
}

void Communicator::all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                              std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size() * group.size());
  auto ex = exchange(op, group, in);
  count_exchange(op, *ex, in.size());
  for (size_t m = 0; m < ex->members(); ++m)
    std::memcpy(out.data() + m * in.size(), ex->input(m).data(), in.size());
}

void Communicator::reduce_scatter(std::string_view op, const Group& group, ir::ElementType type,
                                  ReduceOp reduce, std::span<const std::byte> in,
                                  std::span<std::byte> out) {
  check_size(op, "the operand", in.size(), out.size() * group.size());
  check_reducible(op, type, reduce);
  auto ex = exchange(op, group, in);
  count_exchange(op, *ex, in.size());
  size_t offset = ex->my_index() * out.size();
  std::memcpy(out.data(), ex->input(0).data() + offset, out.size());
  for (size_t m = 1; m < ex->members(); ++m)
    reduce_into(type, reduce, out, ex->input(m).subspan(offset, out.size()));
}

void Communicator::all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                              std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  if (in.size() % group.size() != 0)
    support::fail("{}: {} bytes do not split into {} chunks", op, in.size(), group.size());
  size_t chunk = in.size() / group.size();
  auto ex = exchange(op, group, in);
  count_exchange(op, *ex, in.size());
  for (size_t m = 0; m < ex->members(); ++m)
    std::memcpy(out.data() + m * chunk, ex->input(m).data() + ex->my_index() * chunk, chunk);
}

void Communicator::broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                             std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  auto ex = exchange(op, group, in);
  count_exchange(op, *ex, in.size());
  std::memcpy(out.data(), ex->input(0).data(), out.size());
}

void Communicator::permute(std::string_view op, const Group& group, std::optional<int64_t> source,
                           std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  auto ex = exchange(op, group, in);
  count_exchange(op, *ex, in.size());
  if (!source) {
    std::fill(out.begin(), out.end(), std::byte{0});
    return;
  }
  std::memcpy(out.data(), ex->input(index_in_group(op, group, *source)).data(), out.size());
}

void Communicator::barrier(std::string_view op, const Group& group) {
  auto ex = exchange(op, group, {});
  count_exchange(op, *ex, 0);
}

}  // namespace tessera::comm
