// Literals as NumPy .npy files (format versions 1.0 to 3.0, little-endian, C order), the array
// format of the ecosystem (DESIGN.md §3) and the way tests hand arrays to NumPy and back.
//
// Element types NumPy has: i1 (bool), i8..i64, ui8..ui64, f16, f32, f64, complex<f32>,
// complex<f64>. The others are written in the convention of `ml_dtypes` (the NumPy types JAX
// uses): the descr is the type's ml_dtypes name — 'bfloat16', 'float8_e4m3fn', 'float8_e5m2',
// 'float8_e4m3', 'float8_e3m4', 'int4', 'uint4', 'int2', 'uint2' — one element per byte (two for
// bfloat16), which `np.load` reads back as that type once ml_dtypes is imported. Plain NumPy's
// `np.save` of such an array loses the type and writes void elements ('|V2', '|V1', or '<f1' for
// float8_e5m2); those are read when the caller says which type to read them as (`untyped_as`,
// e.g. the parameter the file is for) and its width matches. Sub-byte integers are read modulo
// their width (ml_dtypes may keep them masked or sign-extended) and written sign- or zero-extended.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/literal.h"

namespace tessera::interp {

// The .npy bytes of x.
std::string to_npy(const ir::Literal& x);
// A Literal from .npy bytes; `what` names the source in error messages (e.g. a file name).
ir::Literal from_npy(std::string_view bytes, std::string_view what = "npy data",
                     std::optional<ir::ElementType> untyped_as = std::nullopt);

void save_npy(const ir::Literal& x, const std::string& path);
ir::Literal load_npy(const std::string& path, std::optional<ir::ElementType> untyped_as = std::nullopt);

}  // namespace tessera::interp
