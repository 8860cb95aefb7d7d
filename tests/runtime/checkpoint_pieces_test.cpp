// The piece-wise checkpoint reader and the owner-written save (runtime/checkpoint.h). A state
// saved under an FSDP-style layout on 4 devices (row pieces, one of them uneven, and a replicated
// vector) is read under tensor parallel on 2 devices, data parallel on 4 and whole on 1: every
// device's piece is bitwise the slice of the whole array, and the bytes read for it are exactly the
// bytes of its valid box (plus each opened file's header, counted apart). Staged through
// stage_pieces, the program computes on them as on the whole arrays. A corrupt byte is found in a
// piece that is read whole and not read at all where no piece needs it; a version-2 checkpoint
// still loads (its files read whole). Two "ranks" in threads, each writing its own devices' files
// through SaveGroup, make the same checkpoint as one process; a failure on one fails the save on
// both, naming the rank, and leaves the previous checkpoint current.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "ir/builder.h"
#include "runtime/checkpoint.h"
#include "runtime/layout.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;
namespace fs = std::filesystem;

using testing::TempDir;

std::string read(const fs::path& p) { return testing::read_file(p); }
void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Literal ramp(const Type& t, double scale) {
  Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * double(i) - 3);
  return l;
}

// The arrays and the layouts: "w" 8x6, "e" 5x4 (uneven over 4), "b" 6 (replicated when saved).
const std::vector<std::string> kNames = {"w", "e", "b"};
std::vector<Literal> wholes() { return {ramp(f32({8, 6}), 0.5), ramp(f32({5, 4}), 1.25), ramp(f32({6}), 2)}; }

struct Layout {
  Module m;
  Session session;
  std::optional<ShardedProgram> program;
  Layout(int64_t devices, const std::string& axis, const std::vector<Sharding>& shardings)
      : session(Session::host(devices)) {
    m.add_mesh(Mesh{"m", {{axis, devices}}, {}});
    build_function(m, "id", [&](FunctionBuilder& f) {
      std::vector<Tensor> out;
      std::vector<Literal> w = wholes();
      for (size_t i = 0; i < w.size(); ++i) out.push_back(f.param(w[i].type(), shardings[i]) * 1.0);
      return out;
    });
    program.emplace(session.sharded_program(session.compile(m, "id")));
  }
  const Mesh& mesh() const { return m.meshes[0]; }
  std::vector<ShardedBuffer> stage_wholes() const {
    std::vector<ShardedBuffer> out;
    std::vector<Literal> w = wholes();
    for (size_t i = 0; i < w.size(); ++i) out.push_back(program->stage(i, w[i]));
    return out;
  }
};

Layout fsdp4() { return Layout(4, "data", {Sharding{"m", {{"data"}, {}}, {}, {}}, Sharding{"m", {{"data"}, {}}, {}, {}}, Sharding{"m", {{}}, {}, {}}}); }

int64_t box_bytes(const std::vector<int64_t>& extent) {
  int64_t n = 4;
  for (int64_t e : extent) n *= e;
  return n;
}

TEST(CheckpointPieces, AnFsdpCheckpointReadsUnderOtherPlansPieceByPieceAndOnlyThosePiecesBytes) {
  TempDir dir;
  Layout saved = fsdp4();
  std::string step = save_sharded(dir.path.string(), kNames, saved.stage_wholes(), saved.mesh(), 5);
  auto index = nlohmann::json::parse(read(fs::path(step) / "index.json"));
  EXPECT_EQ(index["version"], 3);
  ASSERT_EQ(index["files"][0]["pieces"].size(), 3u);

  struct Target {
    const char* what;
    Layout layout;
  };
  Target targets[] = {
      {"tp on 2", Layout(2, "model", {Sharding{"m", {{}, {"model"}}, {}, {}}, Sharding{"m", {{}, {"model"}}, {}, {}},
                                      Sharding{"m", {{"model"}}, {}, {}}})},
      {"dp on 4", Layout(4, "data", {Sharding{"m", {{}, {}}, {}, {}}, Sharding{"m", {{}, {}}, {}, {}}, Sharding{"m", {{}}, {}, {}}})},
      {"whole on 1", Layout(1, "data", {Sharding{"m", {{}, {}}, {}, {}}, Sharding{"m", {{}, {}}, {}, {}}, Sharding{"m", {{}}, {}, {}}})},
      {"fsdp on 4", fsdp4()},
  };
  std::vector<Literal> w = wholes();
  for (Target& t : targets) {
    const CompiledProgram& p = t.layout.program->program();
    for (int64_t d = 0; d < t.layout.session.num_devices(); ++d) {
      CheckpointReader reader(dir.path.string());  // one per device: its bytes alone
      int64_t want_bytes = 0;
      for (size_t i = 0; i < kNames.size(); ++i) {
        PieceBox box = piece_box(w[i].type(), p.info.parameter_shardings[i], t.layout.mesh(), d);
        Literal got = reader.read(kNames[i], box.start, box.extent);
        Literal want(f32(box.extent));
        copy_box(w[i], box.start, want, std::vector<int64_t>(box.start.size(), 0), box.extent);
        EXPECT_EQ(got, want) << t.what << ": device " << d << " \"" << kNames[i] << "\"";
        want_bytes += box_bytes(box.extent);
      }
      const ReadStats& s = reader.stats();
      EXPECT_EQ(s.data_bytes, want_bytes) << t.what << ": device " << d;
      // Each file it opened: 8 bytes of length and its header; no more.
      int64_t headers = 0;
      for (int64_t f = 0; f < 4; ++f) {
        std::string file = read(fs::path(step) / fmt::format("device-{}.safetensors", f));
        uint64_t n = 0;
        for (int k = 0; k < 8; ++k) n |= uint64_t(static_cast<unsigned char>(file[size_t(k)])) << (8 * k);
        headers += int64_t(8 + n);
      }
      EXPECT_LE(s.header_bytes, headers) << t.what;
      EXPECT_GE(s.files, 1) << t.what;
      EXPECT_EQ(s.header_bytes, s.files * headers / 4) << t.what << ": the 4 headers are equally long";
    }
    // Staged piece by piece, the program computes on the arrays themselves.
    CheckpointReader reader(dir.path.string());
    std::vector<ShardedBuffer> in;
    for (size_t i = 0; i < kNames.size(); ++i)
      in.push_back(t.layout.program->stage_pieces(i, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
        return reader.read(kNames[i], start, extent);
      }));
    std::vector<ShardedBuffer> out = t.layout.program->execute(in);
    for (size_t i = 0; i < kNames.size(); ++i) EXPECT_EQ(t.layout.program->fetch(out[i]), w[i]) << t.what << " " << kNames[i];
  }
  // Under tp on 2, device 0 reads half of w's and e's bytes: 4 pieces of w's 8x3, e's 5x2.
  CheckpointReader half(dir.path.string());
  half.read("w", {0, 0}, {8, 3});
  EXPECT_EQ(half.stats().data_bytes, 8 * 3 * 4);
  EXPECT_EQ(half.stats().files, 4);
  EXPECT_EQ(half.stats().checked_pieces, 0);  // no source piece was read whole
  half.read("w", {2, 0}, {2, 6});              // device 1's piece of w, whole
  EXPECT_EQ(half.stats().checked_pieces, 1);
}

TEST(CheckpointPieces, CorruptBytesAreFoundWhereTheyAreReadAndVersionTwoStillLoads) {
  TempDir dir;
  Layout saved = fsdp4();
  fs::path step = save_sharded((dir.path / "ckpt").string(), kNames, saved.stage_wholes(), saved.mesh(), 5);
  fs::path dev2 = step / "device-2.safetensors";
  std::string good = read(dev2), bad = good;
  // The file ends with w's piece (48 bytes), e's (row 4 of e, padded to 2 rows: 32 bytes), b (24).
  bad[bad.size() - 24 - 32 + 3] ^= 0x04;  // in e's valid row
  write(dev2, bad);
  std::string e = testing::error_of([&] { load_sharded((dir.path / "ckpt").string()); });
  EXPECT_TRUE(contains(e, dev2.string() + ": CRC-32C 0x")) << e;
  EXPECT_TRUE(contains(e, "of \"e\", but the index says")) << e;
  // A box that leaves e alone reads nothing corrupt.
  CheckpointReader reader((dir.path / "ckpt").string());
  Literal want(f32({2, 6}));
  copy_box(ramp(f32({8, 6}), 0.5), {4, 0}, want, {0, 0}, {2, 6});
  EXPECT_EQ(reader.read("w", {4, 0}, {2, 6}), want);
  // Replicated b, corrupt only on device 3: read from device 0, not from 3.
  write(dev2, good);
  fs::path dev3 = step / "device-3.safetensors";
  std::string three = read(dev3);
  three[three.size() - 3] ^= 0x01;
  write(dev3, three);
  EXPECT_EQ(testing::error_of([&] { CheckpointReader(step.string()).read_whole("b"); }), "<no error>");
  // ... but from device 3 when the reader prefers its own device's file.
  CheckpointReader own(step.string());
  own.prefer([](int64_t d) { return d == 3; });
  e = testing::error_of([&] { own.read_whole("b"); });
  EXPECT_TRUE(contains(e, dev3.string() + ": CRC-32C")) << e;

  // Version 2: no per-piece checksums; each file read whole and checked against its own.
  fs::path v2 = dir.path / "v2";
  fs::create_directories(v2);
  Layout again = fsdp4();
  fs::path fresh = save_sharded((dir.path / "fresh").string(), kNames, again.stage_wholes(), again.mesh(), 1);
  for (int d = 0; d < 4; ++d) fs::copy_file(fresh / fmt::format("device-{}.safetensors", d), v2 / fmt::format("device-{}.safetensors", d));
  auto index = nlohmann::json::parse(read(fresh / "index.json"));
  index["version"] = 2;
  for (auto& f : index["files"]) f.erase("pieces");
  write(v2 / "index.json", index.dump());
  CheckpointReader old(v2.string());
  std::vector<Literal> w = wholes();
  for (size_t i = 0; i < kNames.size(); ++i) EXPECT_EQ(old.read_whole(kNames[i]), w[i]);
  int64_t all = 0;
  for (int d = 0; d < 4; ++d) all += int64_t(fs::file_size(v2 / fmt::format("device-{}.safetensors", d)));
  EXPECT_EQ(old.stats().data_bytes, all);
  std::string bytes = read(v2 / "device-1.safetensors");
  bytes[bytes.size() - 30] ^= 0x08;
  write(v2 / "device-1.safetensors", bytes);
  e = testing::error_of([&] { load_sharded(v2.string()); });
  EXPECT_TRUE(contains(e, (v2 / "device-1.safetensors").string() + ": CRC-32C 0x")) << e;
  // A box outside the array is a named error.
  e = testing::error_of([&] { CheckpointReader(fresh.string()).read("w", {7, 0}, {2, 6}); });
  EXPECT_TRUE(contains(e, "the box at [7, 0] of extent [2, 6] is not inside \"w\" (tensor<8x6xf32>)")) << e;
  e = testing::error_of([&] { CheckpointReader(fresh.string()).read_whole("nope"); });
  EXPECT_TRUE(contains(e, "the checkpoint has no \"nope\"")) << e;
}

// Two ranks in threads: each owns 2 of the 4 devices; `exchange` hands every rank every payload.
struct TwoRanks {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::string>> rounds;
  std::vector<int> arrived;
  SaveGroup group(int rank) {
    SaveGroup g;
    g.rank = rank;
    g.owns = [rank](int64_t d) { return d / 2 == rank; };
    g.exchange = [this, rank, round = std::make_shared<size_t>(0)](const std::string& payload) {
      std::unique_lock lock(mu);
      size_t r = (*round)++;
      if (rounds.size() <= r) rounds.resize(r + 1, std::vector<std::string>(2)), arrived.resize(r + 1, 0);
      rounds[r][size_t(rank)] = payload;
      ++arrived[r];
      cv.notify_all();
      cv.wait(lock, [&] { return arrived[r] == 2; });
      return rounds[r];
    };
    return g;
  }
};

TEST(CheckpointPieces, EachRankWritesItsOwnDevicesFilesAndAFailureOnOneFailsTheSaveOnBoth) {
  TempDir dir;
  Layout layout = fsdp4();
  std::vector<ShardedBuffer> state = layout.stage_wholes();
  fs::path one = save_sharded((dir.path / "one").string(), kNames, state, layout.mesh(), 3);
  // Each rank holds only its devices' pieces (as over MPI) and writes only their files.
  auto rank_local = [&](int rank) {
    std::vector<ShardedBuffer> mine;
    for (const ShardedBuffer& b : state) {
      auto pieces = std::make_shared<std::vector<Literal>>(4);
      for (int d = 2 * rank; d < 2 * rank + 2; ++d) (*pieces)[size_t(d)] = (*b.pieces)[size_t(d)];
      mine.push_back({b.type, b.sharding, pieces});
    }
    return mine;
  };
  TwoRanks ranks;
  std::string results[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      results[r] = testing::error_of([&] {
        save_sharded((dir.path / "two").string(), kNames, rank_local(r), layout.mesh(), 3, {}, 2, ranks.group(r));
      });
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(results[0], "<no error>");
  EXPECT_EQ(results[1], "<no error>");
  for (const char* f : {"index.json", "device-0.safetensors", "device-1.safetensors", "device-2.safetensors", "device-3.safetensors"})
    EXPECT_EQ(read(one / f), read(dir.path / "two" / "step-3" / f)) << f;
  EXPECT_EQ(read(dir.path / "two" / "latest"), "step-3\n");

  // Rank 1 cannot write its files (a piece of a type safetensors has no dtype for): both fail,
  // rank 0 naming rank 1; the partial step-4 is removed, step-3 stays current.
  TwoRanks again;
  threads.clear();
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::vector<ShardedBuffer> mine = rank_local(r);
      if (r == 1) (*mine[0].pieces)[3] = Literal(Type(ElementType::c64, {2, 6}));
      results[r] = testing::error_of([&] {
        save_sharded((dir.path / "two").string(), kNames, mine, layout.mesh(), 4, {}, 2, again.group(r));
      });
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(contains(results[0], "save_sharded " + (dir.path / "two").string() + ": rank 1 failed: safetensors has no "
                                   "dtype for element type")) << results[0];
  EXPECT_TRUE(contains(results[1], "safetensors has no dtype")) << results[1];
  EXPECT_FALSE(fs::exists(dir.path / "two" / "step-4"));
  EXPECT_EQ(read(dir.path / "two" / "latest"), "step-3\n");
  std::vector<Literal> w = wholes();
  NamedArrays back = load_sharded((dir.path / "two").string());
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back[i].second, w[i]);
}

}  // namespace
}  // namespace tessera::runtime
