// .npy reading and writing: a magic string, a version, a header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (8, 4), } padded to a multiple of 64 bytes,
// then the raw little-endian elements in C order. Literal storage already is that layout for every
// type NumPy has (bools as one byte 0/1, f16 as its bit pattern), so the data is copied as is.
#include "interp/npy.h"

#include <array>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support/error.h"
#include "support/durable_file.h"
#include "support/memory.h"
#include "support/strings.h"

namespace tessera::interp {

using ir::ElementType;
using ir::Literal;

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct Descr {
  ElementType type;
  std::string_view descr;
};
constexpr std::array<Descr, 30> kDescrs = {{
    {ElementType::i1, "|b1"},   {ElementType::i8, "|i1"},   {ElementType::i16, "<i2"},
    {ElementType::i32, "<i4"},  {ElementType::i64, "<i8"},  {ElementType::ui8, "|u1"},
    {ElementType::ui16, "<u2"}, {ElementType::ui32, "<u4"}, {ElementType::ui64, "<u8"},
    {ElementType::f16, "<f2"},  {ElementType::f32, "<f4"},  {ElementType::f64, "<f8"},
    {ElementType::c64, "<c8"},  {ElementType::c128, "<c16"},
    // ml_dtypes' names (str(array.dtype)), what JAX users' files carry for the types NumPy lacks.
    {ElementType::bf16, "bfloat16"},          {ElementType::f8E4M3FN, "float8_e4m3fn"},
    {ElementType::f8E5M2, "float8_e5m2"},     {ElementType::f8E4M3, "float8_e4m3"},
    {ElementType::f8E3M4, "float8_e3m4"},     {ElementType::i4, "int4"},
    {ElementType::ui4, "uint4"},              {ElementType::i2, "int2"},
    {ElementType::ui2, "uint2"},              {ElementType::f8E4M3FNUZ, "float8_e4m3fnuz"},
    {ElementType::f8E4M3B11FNUZ, "float8_e4m3b11fnuz"}, {ElementType::f8E5M2FNUZ, "float8_e5m2fnuz"},
    {ElementType::f8E8M0FNU, "float8_e8m0fnu"},         {ElementType::f6E2M3FN, "float6_e2m3fn"},
    {ElementType::f6E3M2FN, "float6_e3m2fn"},           {ElementType::f4E2M1FN, "float4_e2m1fn"},
}};

// What np.save writes for an ml_dtypes array: void elements of the type's width, or '<f1' (the
// descr ml_dtypes gives float8_e5m2).
std::optional<int64_t> untyped_width(std::string_view descr) {
  if (descr == "|V1" || descr == "<V1" || descr == "<f1" || descr == "|f1") return 1;
  if (descr == "|V2" || descr == "<V2") return 2;
  return std::nullopt;
}

std::string_view descr_of(ElementType e) {
  for (const Descr& d : kDescrs)
    if (d.type == e) return d.descr;
  support::fail("no .npy element type for {}; convert it before saving as .npy", ir::spelling(e));
}

std::optional<ElementType> type_of(std::string_view descr) {
  // '=' and '<' mean little-endian here; '|' is for single bytes, which NumPy may also write as '<'.
  std::string d(descr);
  if (!d.empty() && (d[0] == '=' || d[0] == '|')) d[0] = '<';
  if (d == "<b1" || d == "<i1" || d == "<u1") d[0] = '|';
  for (const Descr& x : kDescrs)
    if (x.descr == d) return x.type;
  return std::nullopt;
}

// The value of 'key' in the header dict, as text up to the next top-level comma or closing brace.
std::string_view dict_value(std::string_view header, std::string_view key, std::string_view what) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) support::fail("{}: .npy header has no {}", what, quoted);
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) support::fail("{}: malformed .npy header", what);
  size_t begin = header.find_first_not_of(' ', at + 1);
  // Nothing after the ':' (fuzzer finding: substr(npos) threw std::out_of_range).
  if (begin == std::string_view::npos) support::fail("{}: .npy header has no value for {}", what, quoted);
  size_t end = begin;
  int depth = 0;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return header.substr(begin, end - begin);
}

std::vector<int64_t> parse_shape(std::string_view text, std::string_view what) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    support::fail("{}: .npy shape {} is not a tuple", what, text);
  std::vector<int64_t> shape;
  std::string inner(text.substr(1, text.size() - 2));
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;  // the trailing comma of (n,)
    size_t e = item.find_last_not_of(' ');
    // The whole item, strictly: strtoll read "(2x,)" as (2,) and clamped a 20-digit size to INT64_MAX.
    std::optional<int64_t> v = support::parse_int(std::string_view(item).substr(b, e + 1 - b));
    if (!v || *v < 0) support::fail("{}: .npy shape {} is malformed", what, text);
    shape.push_back(*v);
  }
  return shape;
}

}  // namespace

std::string to_npy(const Literal& x) {
  std::vector<std::string> dims;
  for (int64_t d : x.shape()) dims.push_back(std::to_string(d));
  std::string shape = x.shape().size() == 1 ? "(" + dims[0] + ",)" : "(" + support::join(dims, ", ") + ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(x.element()), shape);
  // Magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64.
  size_t total = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(x.bytes().data()), x.bytes().size());
  return out;
}

Literal from_npy(std::string_view bytes, std::string_view what, std::optional<ElementType> untyped_as) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    support::fail("{}: not a .npy file (no \\x93NUMPY magic)", what);
  auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  size_t major = byte(6);
  size_t header_len, offset;
  if (major == 1) {
    header_len = byte(8) | byte(9) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) support::fail("{}: truncated .npy header", what);
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    offset = 12;
  } else {
    support::fail("{}: .npy format version {} is not supported", what, major);
  }
  if (bytes.size() < offset + header_len) support::fail("{}: truncated .npy header", what);
  std::string_view header = bytes.substr(offset, header_len);
  std::string_view descr = dict_value(header, "descr", what);
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'')
    support::fail("{}: .npy descr {} is not a string", what, descr);
  descr = descr.substr(1, descr.size() - 2);
  std::optional<ElementType> e = type_of(descr);
  if (!e) {
    std::optional<int64_t> width = untyped_width(descr);
    if (width && untyped_as && ir::info(*untyped_as).bytes == *width)
      e = untyped_as;
    else if (width && untyped_as)
      support::fail("{}: .npy elements are untyped ('{}', {} byte{}), which cannot be read as {}", what, descr, *width,
                    *width == 1 ? "" : "s", ir::spelling(*untyped_as));
    else if (width)
      support::fail("{}: .npy elements are untyped ('{}', {} byte{}: an ml_dtypes array saved by np.save?); "
                    "save it with its ml_dtypes name as descr, or as .safetensors", what, descr, *width, *width == 1 ? "" : "s");
    else
      support::fail("{}: .npy element type '{}' is not supported (little-endian numbers, bools and the ml_dtypes "
                    "types only)", what, descr);
  }
  if (dict_value(header, "fortran_order", what) != "False")
    support::fail("{}: .npy arrays in Fortran order are not supported", what);
  ir::Type type(*e, parse_shape(dict_value(header, "shape", what), what));
  // The size is checked against the data before anything is allocated: a header may claim any shape.
  std::optional<int64_t> needed = support::checked_bytes(type.shape, ir::info(*e).bytes);
  if (!needed) support::fail("{}: .npy shape {} is too large: its size in bytes does not fit in 64 bits", what, to_string(type));
  std::string_view data = bytes.substr(offset + header_len);
  if (static_cast<int64_t>(data.size()) != *needed)
    support::fail("{}: .npy data has {} bytes, {} needs {}", what, data.size(), to_string(type), *needed);
  Literal x(type);
  if (!data.empty()) std::memcpy(x.bytes().data(), data.data(), data.size());  // empty: no buffer
  // Sub-byte integers: taken modulo their width, into the sign- or zero-extended form kept here.
  if (ir::info(*e).bits < 8 && *e != ElementType::i1)
    for (int64_t i = 0; i < x.num_elements(); ++i) x.set_int(i, x.get_int(i));
  return x;
}

// Written atomically (support/durable_file.h): a full disk or a killed run leaves no torn .npy.
void save_npy(const Literal& x, const std::string& path) {
  std::string data = to_npy(x);
  support::write_file_atomically(path, {data});
}

Literal load_npy(const std::string& path, std::optional<ElementType> untyped_as) {
  std::ifstream f(path, std::ios::binary);
  if (!f) support::fail("cannot read {}", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return from_npy(ss.str(), path, untyped_as);
}

}  // namespace tessera::interp
