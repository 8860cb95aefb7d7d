// Checkpoints: a safetensors file laid out as the format says (header length, JSON header,
// aligned data) and read back exactly; bad files refused by name; a checkpoint written sharded on
// 4 devices (FSDP-style row pieces, uneven included) loads as the whole arrays and stages under
// another layout on 2 devices. The save protocol (checkpoint.h): step directories and `latest`,
// the previous checkpoint kept, CRC-32C against its specification's vectors, corrupt, truncated and
// malformed files named, a failed save (ENOSPC or EIO at any of its operations) leaving the
// previous checkpoint loadable, the version-1 layout still read. (Reading pieces under other
// layouts, counted: checkpoint_pieces_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "ir/builder.h"
#include "runtime/checkpoint.h"
#include "support/durable_file.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;
namespace fs = std::filesystem;
using support::crc32c;
using support::set_io_fault;

using testing::TempDir;

Literal ramp(const Type& t, double scale) {
  Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * double(i) - 3);
  return l;
}

TEST(Safetensors, RoundTripAndLayout) {
  TempDir dir;
  std::string path = (dir.path / "a.safetensors").string();
  NamedArrays arrays = {{"layers.0.w", ramp(f32({3, 5}), 0.5)}, {"step", ramp(i64({}), 1)},
                        {"mask", Literal::from_ints(i1({4}), std::vector<int64_t>{1, 0, 1, 1})},
                        {"b", ramp(f64({2}), 0.25)}};
  save_safetensors(path, arrays, {{"format", "pt"}});
  std::map<std::string, std::string> meta;
  NamedArrays back = load_safetensors(path, &meta);
  ASSERT_EQ(back.size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ(back[i].first, arrays[i].first);
    EXPECT_EQ(back[i].second, arrays[i].second) << arrays[i].first;
  }
  EXPECT_EQ(meta["format"], "pt");
  // The bytes: u64 little-endian header length, JSON, then the data from an 8-byte aligned start.
  std::ifstream in(path, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[size_t(i)])) << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["layers.0.w"]["dtype"], "F32");
  EXPECT_EQ(header["layers.0.w"]["shape"], (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(header["layers.0.w"]["data_offsets"], (std::vector<int64_t>{0, 60}));
  EXPECT_EQ(header["mask"]["dtype"], "BOOL");
  EXPECT_EQ(bytes.size(), 8 + n + 60 + 8 + 4 + 16);
}

TEST(Safetensors, BadFilesAreRefusedByName) {
  TempDir dir;
  std::string path = (dir.path / "bad.safetensors").string();
  std::ofstream(path) << "abc";
  EXPECT_NE(testing::error_of([&] { load_safetensors(path); }).find("too short"), std::string::npos);
  std::string e = testing::error_of([&] { load_safetensors((dir.path / "missing").string()); });
  EXPECT_NE(e.find("cannot read"), std::string::npos) << e;
  std::string dup = testing::error_of([&] {
    save_safetensors(path, {{"x", ramp(f32({1}), 1)}, {"x", ramp(f32({1}), 1)}});
  });
  EXPECT_NE(dup.find("\"x\" is used twice"), std::string::npos) << dup;
}

TEST(ShardedCheckpoint, SavedOnFourDevicesLoadsUnderAnotherLayoutOnTwo) {
  TempDir dir;
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "id", [](FunctionBuilder& f) {
    Tensor w = f.param(f32({6, 3}), Sharding{"m", {{"data"}, {}}, {}, {}});  // 6 rows over 4: uneven
    Tensor v = f.param(f32({8}), Sharding{"m", {{"data"}}, {}, {}});
    return std::vector<Tensor>{w * 1.0, v * 1.0};
  });
  Session four = Session::host(4);
  ShardedProgram p4 = four.sharded_program(four.compile(m, "id"));
  Literal w = ramp(f32({6, 3}), 0.5), v = ramp(f32({8}), 2);
  std::vector<ShardedBuffer> bufs = {p4.stage(0, w), p4.stage(1, v)};
  EXPECT_EQ(save_sharded(dir.path.string(), {"w", "v"}, bufs, m.meshes[0], 7), (dir.path / "step-7").string());
  EXPECT_TRUE(fs::exists(dir.path / "step-7" / "device-3.safetensors"));
  NamedArrays whole = load_sharded(dir.path.string());
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0].second, w);
  EXPECT_EQ(whole[1].second, v);
  // Another plan on 2 devices: columns split, v whole.
  Module m2;
  m2.add_mesh(Mesh{"m", {{"model", 2}}, {}});
  build_function(m2, "id", [](FunctionBuilder& f) {
    Tensor a = f.param(f32({6, 3}), Sharding{"m", {{}, {"model"}}, {}, {}});
    Tensor b = f.param(f32({8}));
    return std::vector<Tensor>{a + 0.0, b + 0.0};
  });
  Session two = Session::host(2);
  ShardedProgram p2 = two.sharded_program(two.compile(m2, "id"));
  std::vector<ShardedBuffer> staged = {p2.stage(0, whole[0].second), p2.stage(1, whole[1].second)};
  std::vector<ShardedBuffer> out = p2.execute(staged);
  EXPECT_EQ(p2.fetch(out[0]), w);
  EXPECT_EQ(p2.fetch(out[1]), v);
}

std::string read(const fs::path& p) { return testing::read_file(p); }

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Crc32c, SpecificationVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the check value of CRC-32/ISCSI
  // RFC 3720 B.4: 32 bytes of zeros, of ones, ascending and descending.
  std::string zeros(32, '\0'), ones(32, '\xff'), up, down;
  for (int i = 0; i < 32; ++i) up += char(i), down += char(31 - i);
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
  EXPECT_EQ(crc32c("6789", crc32c("12345")), 0xE3069283u);  // continued over a second part
  EXPECT_EQ(crc32c(""), 0u);
}

// A small sharded state on 2 devices: w split by rows, v whole, both scaled by `scale`.
struct TwoDevices {
  Module m;
  Session session = Session::host(2);
  std::optional<ShardedProgram> program;
  TwoDevices() {
    m.add_mesh(Mesh{"m", {{"data", 2}}, {}});
    build_function(m, "id", [](FunctionBuilder& f) {
      Tensor w = f.param(f32({5, 3}), Sharding{"m", {{"data"}, {}}, {}, {}});
      Tensor v = f.param(f32({4}));
      return std::vector<Tensor>{w * 1.0, v * 1.0};
    });
    program.emplace(session.sharded_program(session.compile(m, "id")));
  }
  NamedArrays arrays(double scale) const { return {{"w", ramp(f32({5, 3}), scale)}, {"v", ramp(f32({4}), 2 * scale)}}; }
  std::string save(const fs::path& dir, double scale, int64_t step, int keep = 2) const {
    NamedArrays a = arrays(scale);
    return save_sharded(dir.string(), {"w", "v"}, {program->stage(0, a[0].second), program->stage(1, a[1].second)},
                        m.meshes[0], step, {}, keep);
  }
  void expect_loads(const fs::path& dir, double scale) const {
    NamedArrays got = load_sharded(dir.string()), want = arrays(scale);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].second, want[0].second);
    EXPECT_EQ(got[1].second, want[1].second);
  }
};

TEST(ShardedCheckpoint, EachSaveIsAStepDirectoryAndLatestPointsAtIt) {
  TempDir dir;
  TwoDevices two;
  fs::path ckpt = dir.path / "ckpt";  // made by the first save
  two.save(ckpt, 1, 3);
  EXPECT_EQ(read(ckpt / "latest"), "step-3\n");
  two.expect_loads(ckpt, 1);
  auto index = nlohmann::json::parse(read(ckpt / "step-3" / "index.json"));
  EXPECT_EQ(index["version"], 3);
  EXPECT_EQ(index["step"], 3);
  ASSERT_EQ(index["files"].size(), 2u);
  std::string dev1 = read(ckpt / "step-3" / "device-1.safetensors");
  EXPECT_EQ(index["files"][1]["name"], "device-1.safetensors");
  EXPECT_EQ(index["files"][1]["bytes"], dev1.size());
  EXPECT_EQ(index["files"][1]["crc32c"], crc32c(dev1));
  // Per piece: the CRC-32C of the valid rows of w (3..4) and of v.
  ASSERT_EQ(index["files"][1]["pieces"].size(), 2u);
  std::string w_rows;
  for (int i = 9; i < 15; ++i) {
    float x = 1.0f * float(i) - 3;
    w_rows.append(reinterpret_cast<const char*>(&x), 4);
  }
  EXPECT_EQ(index["files"][1]["pieces"][0], crc32c(w_rows));

  two.save(ckpt, 2, 4);  // the previous one stays; the one before it goes
  EXPECT_EQ(read(ckpt / "latest"), "step-4\n");
  EXPECT_TRUE(fs::exists(ckpt / "step-3"));
  two.save(ckpt, 3, 5);
  EXPECT_FALSE(fs::exists(ckpt / "step-3"));
  EXPECT_TRUE(fs::exists(ckpt / "step-4"));
  two.expect_loads(ckpt, 3);
  two.expect_loads(ckpt / "step-4", 2);  // a step directory loads directly
  two.expect_loads(ckpt.string() + "/", 3);
  EXPECT_EQ(checkpoint_directory(ckpt.string()), (ckpt / "step-5").string());
  // The same step again (a rerun): a fresh name, the checkpoint of that name untouched.
  EXPECT_EQ(two.save(ckpt, 4, 5), (ckpt / "step-5.2").string());
  two.expect_loads(ckpt / "step-5", 3);
  two.expect_loads(ckpt, 4);
  // Leftovers of a save that never switched `latest` are ignored, then removed by the next save.
  fs::create_directories(ckpt / "step-9");
  write(ckpt / "step-9" / "device-0.safetensors", "partial");
  write(ckpt / "notes.txt", "mine");
  two.expect_loads(ckpt, 4);
  two.save(ckpt, 5, 6);
  EXPECT_FALSE(fs::exists(ckpt / "step-9"));
  EXPECT_TRUE(fs::exists(ckpt / "step-5.2"));  // the previous
  EXPECT_TRUE(fs::exists(ckpt / "notes.txt"));  // not the save's: never removed
  EXPECT_FALSE(fs::exists(ckpt / "latest.tmp"));
}

// --keep K: the newest K complete checkpoints stay, the one `latest` named before a save first.
TEST(ShardedCheckpoint, KeepHoldsTheNewestCheckpointsAndAlwaysThePrevious) {
  TempDir dir;
  TwoDevices two;
  fs::path ckpt = dir.path / "ckpt";
  for (int64_t step = 1; step <= 5; ++step) two.save(ckpt, double(step), step, 3);
  auto steps = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(ckpt))
      if (e.is_directory()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_EQ(steps(), (std::vector<std::string>{"step-3", "step-4", "step-5"}));
  two.expect_loads(ckpt / "step-3", 3);
  // A killed save of step 9 wrote its index but never switched `latest`: the previous checkpoint
  // (step-5) is kept before it, and with keep 1 only the new one stays.
  fs::copy(ckpt / "step-4", ckpt / "step-9");
  two.save(ckpt, 6, 6, 2);
  EXPECT_EQ(steps(), (std::vector<std::string>{"step-5", "step-6"}));
  two.save(ckpt, 7, 7, 1);
  EXPECT_EQ(steps(), (std::vector<std::string>{"step-7"}));
  two.expect_loads(ckpt, 7);
  std::string e = testing::error_of([&] { two.save(ckpt, 8, 8, 0); });
  EXPECT_NE(e.find("keep 0 checkpoints"), std::string::npos) << e;
}

TEST(ShardedCheckpoint, VersionOneLayoutStillLoads) {
  // Version 1: index.json (no version, no files) and the device files directly in the directory.
  TempDir dir;
  TwoDevices two;
  std::string step = two.save(dir.path / "new", 1.5, 2);
  fs::create_directories(dir.path / "old");
  for (const char* f : {"device-0.safetensors", "device-1.safetensors"}) fs::copy_file(fs::path(step) / f, dir.path / "old" / f);
  auto index = nlohmann::json::parse(read(fs::path(step) / "index.json"));
  for (const char* key : {"version", "files", "step", "format"}) index.erase(key);
  write(dir.path / "old" / "index.json", index.dump(2));
  two.expect_loads(dir.path / "old", 1.5);
}

TEST(ShardedCheckpoint, CorruptOrTruncatedFilesAreNamed) {
  TempDir dir;
  TwoDevices two;
  fs::path ckpt = dir.path / "ckpt";
  fs::path dev1 = fs::path(two.save(ckpt, 1, 3)) / "device-1.safetensors";
  std::string good = read(dev1);
  std::string bad = good;
  // One bit of w's piece (rows 3..4 of w, padded to 3 rows: 36 bytes), which precedes v (16).
  bad[bad.size() - 16 - 36 + 5] ^= 0x10;
  write(dev1, bad);
  std::string e = testing::error_of([&] { load_sharded(ckpt.string()); });
  EXPECT_TRUE(contains(e, dev1.string() + ": CRC-32C 0x")) << e;
  EXPECT_TRUE(contains(e, "corrupt")) << e;
  write(dev1, good.substr(0, good.size() - 12));
  e = testing::error_of([&] { load_sharded(ckpt.string()); });
  EXPECT_TRUE(contains(e, fmt::format("{}: {} bytes, but the index says {}", dev1.string(), good.size() - 12, good.size())))
      << e;
  fs::remove(dev1);
  e = testing::error_of([&] { load_sharded(ckpt.string()); });
  EXPECT_TRUE(contains(e, dev1.string() + ": cannot read the file: No such file or directory")) << e;

  // A plain safetensors file cut short: the message compares the bytes there with the bytes needed.
  std::string path = (dir.path / "a.safetensors").string();
  save_safetensors(path, {{"x", ramp(f32({3}), 1)}});
  std::string whole = read(path);
  write(path, whole.substr(0, whole.size() - 4));
  e = testing::error_of([&] { load_safetensors(path); });
  EXPECT_TRUE(contains(e, "\"x\" has data_offsets [0, 12] outside the 8 bytes of data")) << e;
  // A header whose offsets disagree with the shape.
  std::string header = R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  while (header.size() % 8) header += ' ';
  std::string len(8, '\0');
  len[0] = char(header.size());
  write(path, len + header + std::string(8, '\0'));
  e = testing::error_of([&] { load_safetensors(path); });
  EXPECT_TRUE(contains(e, "\"x\" holds 8 bytes, its shape tensor<3xf32> needs 12")) << e;
  // A renamed key.
  header = R"({"x":{"dtyp":"F32","shape":[3],"data_offsets":[0,12]}})";
  while (header.size() % 8) header += ' ';
  len[0] = char(header.size());
  write(path, len + header + std::string(12, '\0'));
  e = testing::error_of([&] { load_safetensors(path); });
  EXPECT_TRUE(contains(e, "missing field \"x.dtype\"")) << e;
  // Arrays must tile the data: two names for the same bytes, a hole, and bytes after the last array.
  auto with_header = [&](std::string h, size_t data_bytes) {
    while (h.size() % 8) h += ' ';
    len[0] = char(h.size());
    write(path, len + h + std::string(data_bytes, '\0'));
    return testing::error_of([&] { load_safetensors(path); });
  };
  e = with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8);
  EXPECT_TRUE(contains(e, "\"y\" has data_offsets [4, 8], but the arrays before it end at 8 (the arrays overlap)")) << e;
  e = with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12);
  EXPECT_TRUE(contains(e, "\"y\" has data_offsets [8, 12], but the arrays before it end at 4 (a gap no array owns)")) << e;
  e = with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12);
  EXPECT_TRUE(contains(e, "the arrays end at byte 4 of 12 bytes of data")) << e;
  // Empty arrays take no bytes and may sit anywhere in the order.
  e = with_header(R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  EXPECT_EQ(e, "<no error>") << e;
}

TEST(ShardedCheckpoint, MalformedIndexFieldsAreNamed) {
  TempDir dir;
  TwoDevices two;
  fs::path step = two.save(dir.path / "ckpt", 1, 3);
  std::string good = read(step / "index.json");
  auto error_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto index = nlohmann::json::parse(good);
    edit(index);
    write(step / "index.json", index.dump());
    return testing::error_of([&] { load_sharded((dir.path / "ckpt").string()); });
  };
  std::string file = (step / "index.json").string();
  std::string e = error_with([](auto& j) { j["devices"] = "four"; });
  EXPECT_TRUE(contains(e, file + ": \"devices\" must be an integer, not string \"four\"")) << e;
  e = error_with([](auto& j) { j.erase("mesh"); });
  EXPECT_TRUE(contains(e, file + ": missing field \"mesh\"")) << e;
  e = error_with([](auto& j) { j["mesh"]["axes"][0][0] = "model"; });  // the shardings name "data"
  EXPECT_TRUE(contains(e, "names axis \"data\", which is not in mesh @m")) << e;
  e = error_with([](auto& j) { j["arrays"][1]["shape"] = nlohmann::json::array({"4"}); });
  EXPECT_TRUE(contains(e, "\"arrays[1].shape[0]\" must be an integer, not string \"4\"")) << e;
  e = error_with([](auto& j) { j["files"][0].erase("crc32c"); });
  EXPECT_TRUE(contains(e, "missing field \"files[0].crc32c\"")) << e;
  e = error_with([](auto& j) { j["devices"] = 3; });
  EXPECT_TRUE(contains(e, "\"files\" lists 2 files for 3 devices")) << e;
  e = error_with([](auto& j) { j["arrays"][0]["shape"] = nlohmann::json::array({8, 3}); });  // pieces of 4 rows
  EXPECT_TRUE(contains(e, "device-0.safetensors: \"w\" is tensor<3x3xf32>, its sharding in the index makes its piece "
                          "tensor<4x3xf32>")) << e;
  e = error_with([](auto& j) { j["mesh"]["axes"][0][1] = 0; });
  EXPECT_TRUE(contains(e, file + ": \"mesh.axes[0][1]\" is 0, outside 1..65536")) << e;
  e = error_with([](auto& j) { j["version"] = 9; });
  EXPECT_TRUE(contains(e, "version 9")) << e;
  e = error_with([](auto& j) { j = nlohmann::json::array(); });
  EXPECT_TRUE(contains(e, "expected an object at the top level, not array []")) << e;
  write(step / "index.json", "{\"mesh\": ");
  e = testing::error_of([&] { load_sharded((dir.path / "ckpt").string()); });
  EXPECT_TRUE(contains(e, file + ": the index is not JSON")) << e;

  write(dir.path / "ckpt" / "latest", "../elsewhere\n");
  e = testing::error_of([&] { load_sharded((dir.path / "ckpt").string()); });
  EXPECT_TRUE(contains(e, "latest: expected the name of a checkpoint directory")) << e;
  write(dir.path / "ckpt" / "latest", "step-8\n");
  e = testing::error_of([&] { load_sharded((dir.path / "ckpt").string()); });
  EXPECT_TRUE(contains(e, "latest names step-8, which is not a directory there")) << e;
  fs::remove(dir.path / "ckpt" / "latest");
  e = testing::error_of([&] { load_sharded((dir.path / "ckpt").string()); });
  EXPECT_TRUE(contains(e, "no checkpoint here")) << e;
}

TEST(ShardedCheckpoint, SavingUnderARegularFileIsANamedError) {
  TempDir dir;
  TwoDevices two;
  write(dir.path / "file", "x");
  std::string e = testing::error_of([&] { two.save(dir.path / "file" / "ckpt", 1, 1); });
  EXPECT_TRUE(contains(e, (dir.path / "file" / "ckpt").string() + ": cannot create the checkpoint directory: Not a directory"))
      << e;
  e = testing::error_of([&] { two.save(dir.path / "file", 1, 1); });
  EXPECT_TRUE(contains(e, "cannot create the checkpoint directory")) << e;
  e = testing::error_of([&] { save_safetensors((dir.path / "file" / "a.safetensors").string(), {}); });
  EXPECT_TRUE(contains(e, "a.safetensors.tmp: open failed: Not a directory")) << e;
}

// A buffer of partial sums (unreduced) is not an array a checkpoint can hold piece by piece.
TEST(ShardedCheckpoint, AnUnreducedBufferIsRefused) {
  TempDir dir;
  TwoDevices two;
  ShardedBuffer v = two.program->stage(1, ramp(f32({4}), 1));
  v.sharding.unreduced = {AxisRef("data")};
  std::string e = testing::error_of([&] { save_sharded((dir.path / "ckpt").string(), {"v"}, {v}, two.m.meshes[0], 1); });
  EXPECT_TRUE(contains(e, "save_sharded: \"v\" is unreduced")) << e;
}

// Restores the fault plan however a test ends.
struct FaultGuard {
  ~FaultGuard() { set_io_fault(""); }
};

TEST(ShardedCheckpoint, AFailedSaveAtAnyOperationLeavesThePreviousOne) {
  TempDir dir;
  TwoDevices two;
  FaultGuard guard;
  fs::path ckpt = dir.path / "ckpt";
  two.save(ckpt, 1, 3);
  int failures = 0;
  for (int k = 1;; ++k) {  // ENOSPC at operation k of the save, until a save has fewer operations
    set_io_fault(fmt::format("{}:{}", k % 3 == 0 ? "eio" : "enospc", k));
    std::string e = testing::error_of([&] { two.save(ckpt, 2, 4); });
    set_io_fault("");
    if (e == "<no error>") break;
    ++failures;
    EXPECT_TRUE(contains(e, k % 3 == 0 ? "Input/output error" : "No space left on device")) << k << ": " << e;
    EXPECT_TRUE(contains(e, ckpt.string())) << e;
    if (read(ckpt / "latest") == "step-4\n") {
      // Failed after the switch (syncing DIR): the new checkpoint is whole and current, the
      // previous one still there; undo the switch for the next k.
      EXPECT_TRUE(contains(e, ckpt.string() + ": fsync failed") || contains(e, ckpt.string() + ": open failed")) << e;
      two.expect_loads(ckpt, 2);
      two.expect_loads(ckpt / "step-3", 1);
      write(ckpt / "latest", "step-3\n");
      fs::remove_all(ckpt / "step-4");
      continue;
    }
    two.expect_loads(ckpt, 1);
    EXPECT_FALSE(fs::exists(ckpt / "step-4")) << k << ": " << e;  // the partial save removed
    for (const auto& entry : fs::directory_iterator(ckpt / "step-3"))
      EXPECT_EQ(entry.path().extension(), entry.path().filename() == "index.json" ? ".json" : ".safetensors");
    ASSERT_LT(k, 200);
  }
  // Each of 2 files and the index: open, writes, fsync, close, rename; the directory syncs; latest.
  EXPECT_GE(failures, 20);
  two.expect_loads(ckpt, 2);
}

}  // namespace
}  // namespace tessera::runtime
