// stablehlo.fft's attributes: fft_type, which the text gives as #stablehlo<fft_type FFT|IFFT|RFFT|
// IRFFT> (kept as that text, an Opaque attribute), and fft_length (an i64 array). Shared by the
// shape rule, the builder, the kernel, the printer and the parser.
#pragma once

#include <optional>
#include <string_view>

#include "ir/attribute.h"

namespace tessera::ir {

enum class FftType { kFft, kIfft, kRfft, kIrfft };

// nullopt when fft_type is absent or names no transform.
std::optional<FftType> fft_type_of(const AttrMap& attrs);
std::optional<FftType> parse_fft_type(std::string_view name);  // "FFT", ...
std::string_view to_string(FftType t);
Opaque fft_type_attr(FftType t);

}  // namespace tessera::ir
