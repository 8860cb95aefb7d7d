// The pipeline's transport in one process (ranks.h): LocalRanks hands a message to the receive of
// its run and key only, once; a receive with nothing to take ends at its timeout, or at once when
// its run is aborted; a newer run's send drops what an older run left. A value's messages
// (transfer_messages, pack_parts) unpacked into the destination pieces equal runtime::split's
// pieces of the whole, and a message that does not fit its piece is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/error_of.h"
#include "common/random_literal.h"
#include "mpmd/ranks.h"
#include "runtime/layout.h"

namespace tessera::mpmd {
namespace {

using std::chrono::milliseconds;
using Bytes = std::vector<std::byte>;

constexpr milliseconds kShort{30}, kLong{10000};

Bytes bytes_of(int x) { return {static_cast<std::byte>(x)}; }

TEST(LocalRanks, AMessageGoesToTheReceiveOfItsRunAndKeyOnce) {
  LocalRanks ranks;
  const std::atomic<bool> aborted{false};
  const WireKey key{3, 0, 1, 0}, other{3, 0, 1, 1};
  ranks.send(0, 0, key, bytes_of(7));
  Bytes got;
  EXPECT_EQ(ranks.receive(0, 1, key, kShort, aborted, got), ReceiveStatus::kTimedOut) << "another run's";
  EXPECT_EQ(ranks.receive(0, 0, other, kShort, aborted, got), ReceiveStatus::kTimedOut) << "another piece's";
  ASSERT_EQ(ranks.receive(0, 0, key, kShort, aborted, got), ReceiveStatus::kReceived);
  EXPECT_EQ(got, bytes_of(7));
  EXPECT_EQ(ranks.receive(0, 0, key, kShort, aborted, got), ReceiveStatus::kTimedOut) << "taken once";
}

TEST(LocalRanks, AReceiveWaitsForALaterSend) {
  LocalRanks ranks;
  const std::atomic<bool> aborted{false};
  std::thread sender([&] {
    std::this_thread::sleep_for(kShort);
    ranks.send(0, 0, WireKey{1, 0, 1, 0}, bytes_of(9));
  });
  Bytes got;
  EXPECT_EQ(ranks.receive(0, 0, WireKey{1, 0, 1, 0}, kLong, aborted, got), ReceiveStatus::kReceived);
  sender.join();
  EXPECT_EQ(got, bytes_of(9));
}

TEST(LocalRanks, AnAbortEndsAWaitLongBeforeItsTimeout) {
  LocalRanks ranks;
  std::atomic<bool> aborted{false};
  std::thread failing([&] {
    std::this_thread::sleep_for(kShort);
    aborted = true;
  });
  const auto start = std::chrono::steady_clock::now();
  Bytes got;
  EXPECT_EQ(ranks.receive(0, 0, WireKey{}, kLong, aborted, got), ReceiveStatus::kAborted);
  failing.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kLong / 4);
}

TEST(LocalRanks, ANewerRunDropsWhatAnOlderOneLeft) {
  LocalRanks ranks;
  const std::atomic<bool> aborted{false};
  ranks.send(0, 0, WireKey{1, 0, 1, 0}, bytes_of(1));  // run 0 failed before anyone took it
  ranks.send(0, 1, WireKey{2, 0, 1, 0}, bytes_of(2));
  Bytes got;
  EXPECT_EQ(ranks.receive(0, 0, WireKey{1, 0, 1, 0}, kShort, aborted, got), ReceiveStatus::kTimedOut);
  EXPECT_EQ(ranks.receive(0, 1, WireKey{2, 0, 1, 0}, kShort, aborted, got), ReceiveStatus::kReceived);
}

// A [6, 4] value split in rows over 2 devices, moved to a split in columns over 2 devices as
// messages through LocalRanks: the pieces runtime::split makes of the whole, each element sent once.
TEST(PieceMessages, UnpackedIntoTheDestinationTheyAreItsPieces) {
  const ir::Mesh mesh{"m", {{"x", 2}}, {}};
  const ir::Type type(ir::ElementType::f32, {6, 4});
  const ir::Literal whole = testing::random_literal(type, 5);
  ir::Sharding rows, cols;
  rows.mesh = cols.mesh = "m";
  rows.dims = {ir::DimSharding{"x"}, ir::DimSharding{}};
  cols.dims = {ir::DimSharding{}, ir::DimSharding{"x"}};
  const std::vector<ir::Literal> from = runtime::split(whole, rows, mesh, 2);
  const std::vector<ir::Literal> want = runtime::split(whole, cols, mesh, 2);

  LocalRanks ranks;
  const std::atomic<bool> aborted{false};
  const Placement source{&mesh, rows, {}}, dest{&mesh, cols, {}};
  int64_t sent = 0;
  for (const PieceMessage& m : transfer_messages(type, source, dest)) {
    for (const PiecePart& part : m.parts) sent += part.elements() * 4;
    ranks.send(m.to, 0, WireKey{0, 0, 1, m.piece}, pack_parts(m, from));
  }
  EXPECT_EQ(sent, 6 * 4 * 4) << "each element once";
  for (int64_t d = 0; d < 2; ++d) {
    ir::Literal piece(ir::Type(type.element, dest.box(type, d).shape));
    Bytes message;
    ASSERT_EQ(ranks.receive(0, 0, WireKey{0, 0, 1, d}, kShort, aborted, message), ReceiveStatus::kReceived);
    EXPECT_EQ(unpack_parts(message, piece), 6 * 2 * 4);
    EXPECT_TRUE(piece == want[static_cast<size_t>(d)]) << "piece " << d;  // bitwise
  }
}

TEST(PieceMessages, AMessageThatLeavesItsPieceIsRefused) {
  const ir::Type type(ir::ElementType::f32, {4, 3});
  const Placement whole{nullptr, {}, {}};
  const std::vector<PieceMessage> messages = transfer_messages(type, whole, whole);
  ASSERT_EQ(messages.size(), 1u);
  const Bytes message = pack_parts(messages[0], {testing::random_literal(type, 1)});
  ir::Literal small(ir::Type(type.element, {2, 3}));
  const std::string e = testing::error_of([&] { unpack_parts(message, small); });
  EXPECT_NE(e.find("a transferred part [0, +4) leaves its tensor<2x3xf32> piece in dimension 0"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::mpmd
