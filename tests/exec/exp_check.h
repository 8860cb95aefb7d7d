// Checks of exec::exp_f32 and logistic_f32 against the reference's expressions, for every
// instruction set this CPU has (exp_test.cpp, exp_exhaustive_test.cpp). The oracle is the
// reference kernel's own expression on glibc's exp, element by element.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/exp.h"

namespace tessera::exec::testing {

inline std::vector<ExpIsa> available_isas() {
  std::vector<ExpIsa> out;
  for (ExpIsa isa : {ExpIsa::kBaseline, ExpIsa::kAvx2, ExpIsa::kAvx512})
    if (exp_isa_available(isa)) out.push_back(isa);
  return out;
}

inline const char* isa_name(ExpIsa isa) {
  return isa == ExpIsa::kBaseline ? "baseline" : isa == ExpIsa::kAvx2 ? "avx2" : "avx512";
}

inline float exp_want(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
inline float logistic_want(float x) {
  return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
}

// Whether every instruction set's exp and logistic of x (in place, as a fused loop may run them,
// and into another array) give the reference's bits; the first mismatch of each is reported. The
// default entry points (the CPU's best) are checked too. Counts the inputs checked into *checked.
inline void expect_reference_bits(const std::vector<float>& x, int64_t* checked = nullptr) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint32_t> want_e(x.size()), want_l(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    want_e[i] = std::bit_cast<uint32_t>(exp_want(x[i]));
    want_l[i] = std::bit_cast<uint32_t>(logistic_want(x[i]));
  }
  auto compare = [&](const std::vector<float>& got, const std::vector<uint32_t>& want, const std::string& what) {
    for (size_t i = 0; i < x.size(); ++i)
      if (std::bit_cast<uint32_t>(got[i]) != want[i]) {
        ADD_FAILURE() << what << " of " << x[i] << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(x[i])
                      << "): got bits 0x" << std::bit_cast<uint32_t>(got[i]) << ", the reference's 0x" << want[i];
        return;
      }
  };
  std::vector<float> e(x.size()), l(x.size());
  for (ExpIsa isa : available_isas()) {
    std::string name = isa_name(isa);
    e = x;
    l = x;
    exp_f32(isa, e.data(), e.data(), n);
    logistic_f32(isa, l.data(), l.data(), n);
    compare(e, want_e, "exp (" + name + ", in place)");
    compare(l, want_l, "logistic (" + name + ", in place)");
    exp_f32(isa, x.data(), e.data(), n);
    logistic_f32(isa, x.data(), l.data(), n);
    compare(e, want_e, "exp (" + name + ")");
    compare(l, want_l, "logistic (" + name + ")");
  }
  exp_f32(x.data(), e.data(), n);
  logistic_f32(x.data(), l.data(), n);
  compare(e, want_e, "exp (this CPU's best)");
  compare(l, want_l, "logistic (this CPU's best)");
  if (checked != nullptr) *checked += n;
}

}  // namespace tessera::exec::testing
