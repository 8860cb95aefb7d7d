// Shape rules of issue #17's numeric ops (package B): stablehlo.fft. Messages carry the spec's
// constraint numbers. The spec's C4 fixes the transformed dimensions of the real side only; the
// complex side of FFT and IFFT must match fft_length too (XLA requires it, and a transform of
// another length than its dimension has no meaning here).
#include "ir/fft.h"
#include "ir/shape_rules.h"
#include "support/strings.h"

namespace tessera::ir {

namespace {
constexpr std::pair<FftType, std::string_view> kFftNames[] = {
    {FftType::kFft, "FFT"}, {FftType::kIfft, "IFFT"}, {FftType::kRfft, "RFFT"}, {FftType::kIrfft, "IRFFT"}};
}  // namespace

std::optional<FftType> parse_fft_type(std::string_view name) {
  for (auto [t, text] : kFftNames)
    if (name == text) return t;
  return std::nullopt;
}

std::string_view to_string(FftType t) {
  for (auto [u, text] : kFftNames)
    if (u == t) return text;
  return "?";
}

std::optional<FftType> fft_type_of(const AttrMap& attrs) {
  const auto* o = attrs.find<Opaque>("fft_type");
  if (o == nullptr) return std::nullopt;
  for (auto [t, text] : kFftNames)
    if (o->text == fmt::format("#stablehlo<fft_type {}>", text)) return t;
  return std::nullopt;
}

Opaque fft_type_attr(FftType t) { return Opaque{fmt::format("#stablehlo<fft_type {}>", to_string(t))}; }

namespace shape_rules {

std::vector<Type> infer_Fft(const ShapeQuery& q) {
  const Type& x = q.operands[0];
  auto type = fft_type_of(q.attrs);
  if (!type) reject(q, "fft_type must be #stablehlo<fft_type FFT|IFFT|RFFT|IRFFT>");
  const auto* length = q.attrs.find<std::vector<int64_t>>("fft_length");
  if (length == nullptr) reject(q, "fft_length must be an i64 array");
  auto l = static_cast<int64_t>(length->size());
  if (l < 1 || l > 3) reject(q, "fft_length has {} entries, must have 1 to 3 (C3)", l);
  if (l > x.rank()) reject(q, "fft_length has {} entries, more than the operand's rank {} (C1)", l, x.rank());
  for (int64_t n : *length)
    if (n < 0) reject(q, "fft_length [{}] has a negative entry", support::join(*length, ", "));
  Type result = x;
  bool real_in = *type == FftType::kRfft;
  if (real_in) {
    if (x.element != ElementType::f32 && x.element != ElementType::f64)
      reject(q, "RFFT needs an f32 or f64 operand, not {} (C2)", spelling(x.element));
    result.element = x.element == ElementType::f32 ? ElementType::c64 : ElementType::c128;
  } else {
    if (!is_complex(x.element))
      reject(q, "{} needs a complex operand, not {} (C2)", to_string(*type), spelling(x.element));
    if (*type == FftType::kIrfft) result.element = x.element == ElementType::c64 ? ElementType::f32 : ElementType::f64;
  }
  // The transformed dimensions: those of the real side (C4), and the complex side's except the last
  // of RFFT/IRFFT, which holds n / 2 + 1 entries (C5).
  size_t first = x.shape.size() - length->size();
  for (size_t k = 0; k < length->size(); ++k) {
    int64_t n = (*length)[k];
    bool last = k + 1 == length->size();
    int64_t want = n;
    if (last && *type == FftType::kIrfft) want = n == 0 ? 0 : n / 2 + 1;
    if (x.shape[first + k] != want && x.shape[first + k] != kDynamic)
      reject(q, "operand dimension {} is {}, must be {} for fft_length [{}] ({})", first + k, x.shape[first + k], want,
             support::join(*length, ", "), last && *type == FftType::kIrfft ? "C5" : real_in ? "C4" : "C4, C5");
    if (last && *type == FftType::kRfft) result.shape[first + k] = n == 0 ? 0 : n / 2 + 1;
    if (last && *type == FftType::kIrfft) result.shape[first + k] = n;
  }
  return {result};
}

}  // namespace shape_rules
}  // namespace tessera::ir
