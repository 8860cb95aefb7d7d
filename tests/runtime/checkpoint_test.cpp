// Checkpoints: a safetensors file laid out as the format says (header length, JSON header,
// aligned data) and read back exactly; bad files refused by name; a checkpoint written sharded on
// 4 devices (FSDP-style row pieces, uneven included) loads as the whole arrays and stages under
// another layout on 2 devices.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "ir/builder.h"
#include "runtime/checkpoint.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("tessera_ckpt_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

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
  save_sharded(dir.path.string(), {"w", "v"}, bufs, m.meshes[0]);
  EXPECT_TRUE(fs::exists(dir.path / "device-3.safetensors"));
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

}  // namespace
}  // namespace tessera::runtime
