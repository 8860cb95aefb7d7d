// Literals as NumPy .npy files (format versions 1.0 to 3.0, little-endian, C order), the array
// format of the ecosystem (DESIGN.md §3) and the way tests hand arrays to NumPy and back.
//
// Element types NumPy has: i1 (bool), i8..i64, ui8..ui64, f16, f32, f64, complex<f32>,
// complex<f64>. Others (bf16, the f8 kinds, sub-byte integers) are refused with a UserError
// naming the type, rather than written in a form NumPy would misread.
#pragma once

#include <string>
#include <string_view>

#include "ir/literal.h"

namespace tessera::interp {

// The .npy bytes of x.
std::string to_npy(const ir::Literal& x);
// A Literal from .npy bytes; `what` names the source in error messages (e.g. a file name).
ir::Literal from_npy(std::string_view bytes, std::string_view what = "npy data");

void save_npy(const ir::Literal& x, const std::string& path);
ir::Literal load_npy(const std::string& path);

}  // namespace tessera::interp
