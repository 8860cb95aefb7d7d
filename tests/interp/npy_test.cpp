// .npy files: round trips for every type NumPy has, files NumPy writes and reads, and refusals of
// what NumPy cannot represent or what is malformed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "interp/npy.h"
#include "numpy_oracle.h"
#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using E = ElementType;

const E kNumpyTypes[] = {E::i1,   E::i8,  E::i16, E::i32, E::i64, E::ui8, E::ui16,
                         E::ui32, E::ui64, E::f16, E::f32, E::f64, E::c64, E::c128};

TEST(Npy, RoundTripsEveryNumpyTypeAndShape) {
  uint64_t seed = 1;
  for (E e : kNumpyTypes) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {0, 4}}) {
      Literal x = random_literal(Type(e, shape), seed++);
      std::string bytes = to_npy(x);
      EXPECT_EQ((bytes.find('\n') + 1) % 64, 0u) << "header of " << to_string(x.type()) << " is not aligned";
      EXPECT_TRUE(same(from_npy(bytes), x)) << to_string(x.type());
    }
  }
}

TEST(Npy, NumpyReadsOursAndWeReadNumpys) {
  NumPy np;
  std::vector<Literal> sent;
  uint64_t seed = 50;
  for (E e : kNumpyTypes) {
    sent.push_back(random_literal(Type(e, {3, 2}), seed++, Domain::Special));
    // NumPy must see the dtype and shape we wrote.
    np.add(fmt::format("a0 if (a0.dtype, a0.shape) == ({}, (3, 2)) else None", numpy_dtype(e)), {sent.back()});
  }
  std::vector<Literal> back = np.run();
  ASSERT_EQ(back.size(), sent.size());
  for (size_t i = 0; i < back.size(); ++i) EXPECT_TRUE(same(back[i], sent[i])) << to_string(sent[i].type());
  Literal arange = numpy("np.arange(6, dtype=np.int16).reshape(2, 3)", {});
  EXPECT_TRUE(same(arange, ints(Type(E::i16, {2, 3}), {0, 1, 2, 3, 4, 5})));
  EXPECT_TRUE(same(numpy("np.float32(2.5)", {}), lit(Type(E::f32, {}), {2.5})));
}

TEST(Npy, SavesAndLoadsFiles) {
  auto path = std::filesystem::temp_directory_path() / fmt::format("tessera-npy-test-{}.npy", getpid());
  Literal x = random_literal(Type(E::f64, {4, 4}), 7);
  save_npy(x, path.string());
  EXPECT_TRUE(same(load_npy(path.string()), x));
  std::filesystem::remove(path);
  EXPECT_EQ(message_of([&] { load_npy(path.string()); }), "cannot read " + path.string());
}

TEST(Npy, TypesNumPyLacksGoByTheirMlDtypesNames) {
  Literal b = lit(Type(E::bf16, {3}), {1.5, -2, 3.25});
  std::string bytes = to_npy(b);
  EXPECT_NE(bytes.find("'descr': 'bfloat16'"), std::string::npos);
  EXPECT_TRUE(same(from_npy(bytes), b));
  for (auto [e, name] : {std::pair{E::f8E4M3FN, "float8_e4m3fn"}, {E::f8E5M2, "float8_e5m2"}, {E::f8E4M3, "float8_e4m3"},
                         {E::f8E3M4, "float8_e3m4"}, {E::i4, "int4"}, {E::ui4, "uint4"}, {E::i2, "int2"}, {E::ui2, "uint2"}}) {
    Literal x = lit(Type(e, {2}), {1, 0});
    std::string text = to_npy(x);
    EXPECT_NE(text.find(fmt::format("'descr': '{}'", name)), std::string::npos) << name;
    EXPECT_TRUE(same(from_npy(text), x)) << name;
  }
  // np.save of an ml_dtypes array writes untyped elements: read as the type the caller expects
  // when the widths agree, refused otherwise (and without an expected type).
  std::string untyped = bytes;  // the same header length: the 64-byte padding stays right
  untyped.replace(untyped.find("'descr': 'bfloat16'"), 19, "'descr':      '|V2'");
  EXPECT_TRUE(same(from_npy(untyped, "x.npy", E::bf16), b));
  Literal as_f16 = from_npy(untyped, "x.npy", E::f16);  // any 2-byte type: the bits as they are
  EXPECT_EQ(as_f16.type(), Type(E::f16, {3}));
  EXPECT_TRUE(std::equal(as_f16.bytes().begin(), as_f16.bytes().end(), b.bytes().begin(), b.bytes().end()));
  EXPECT_EQ(message_of([&] { from_npy(untyped, "x.npy", E::f32); }),
            "x.npy: .npy elements are untyped ('|V2', 2 bytes), which cannot be read as f32");
  EXPECT_EQ(message_of([&] { from_npy(untyped, "x.npy"); }),
            "x.npy: .npy elements are untyped ('|V2', 2 bytes: an ml_dtypes array saved by np.save?); save it with "
            "its ml_dtypes name as descr, or as .safetensors");
  // Sub-byte integers are taken modulo their width: a masked int4 -1 (0x0F) reads as -1.
  std::string four = to_npy(lit(Type(E::i4, {1}), {-1}));
  four.back() = '\x0f';
  EXPECT_EQ(from_npy(four).get_int(0), -1);
}

TEST(Npy, RefusesWhatItCannotRepresent) {
  std::string good = to_npy(lit(Type(E::f32, {2, 2}), {1, 2, 3, 4}));
  auto edited = [&](std::string from, std::string to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_EQ(message_of([] { from_npy("hello world", "x.npy"); }), "x.npy: not a .npy file (no \\x93NUMPY magic)");
  EXPECT_EQ(message_of([&] { from_npy(edited("False", "True "), "x.npy"); }),
            "x.npy: .npy arrays in Fortran order are not supported");
  EXPECT_EQ(message_of([&] { from_npy(edited("<f4", ">f4"), "x.npy"); }),
            "x.npy: .npy element type '>f4' is not supported (little-endian numbers, bools and the ml_dtypes types only)");
  EXPECT_EQ(message_of([&] { from_npy(good.substr(0, good.size() - 1), "x.npy"); }),
            "x.npy: .npy data has 15 bytes, tensor<2x2xf32> needs 16");
  EXPECT_EQ(message_of([&] { from_npy(edited("(2, 2)", "(2, x)"), "x.npy"); }), "x.npy: .npy shape (2, x) is malformed");
  // Each size read whole: not "2x" as 2, nor a size past int64 as its largest value.
  EXPECT_EQ(message_of([&] { from_npy(edited("(2, 2)", "(2, 2x)"), "x.npy"); }), "x.npy: .npy shape (2, 2x) is malformed");
  EXPECT_EQ(message_of([&] { from_npy(edited("(2, 2)", "(99999999999999999999, 0)"), "x.npy"); }),
            "x.npy: .npy shape (99999999999999999999, 0) is malformed");
  std::string spaced = edited("(2, 2)", "( 2 , 2 )");
  spaced.erase(spaced.find("   \n"), 3);  // the header keeps its length
  EXPECT_EQ(from_npy(spaced, "x.npy").shape(), (std::vector<int64_t>{2, 2}));
}

}  // namespace
}  // namespace tessera::interp::testing
