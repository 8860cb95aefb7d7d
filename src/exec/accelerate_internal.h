// What the fast kernels of accelerate.cpp and accelerate_elementwise.cpp share: attribute access,
// typed views of a literal's bytes, and Result, the destination a kernel writes (a fresh literal or
// an executable's arena slot). Private to src/exec.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "ir/element_traits.h"
#include "ir/literal.h"
#include "ir/module.h"
#include "support/error.h"

namespace tessera::exec::accel {

using ir::ElementType;
using ir::Literal;
using ir::Op;
using ir::OpKind;
using Ints = std::vector<int64_t>;
using Operands = std::span<const Literal* const>;

inline const Ints& ints(const Op& op, const char* name) {
  static const Ints none;
  const Ints* v = op.attrs().find<Ints>(name);
  return v ? *v : none;
}

inline bool is_f(ElementType e) { return e == ElementType::f32 || e == ElementType::f64; }

// Runs fn<T>() with T the unsigned type of the element's storage size (copies need only bytes).
template <typename F>
bool by_bytes(ElementType e, F&& fn) {
  switch (ir::info(e).bytes) {
    case 1: fn.template operator()<uint8_t>(); return true;
    case 2: fn.template operator()<uint16_t>(); return true;
    case 4: fn.template operator()<uint32_t>(); return true;
    case 8: fn.template operator()<uint64_t>(); return true;
    default: return false;
  }
}

template <typename T>
const T* data(const Literal& l) { return reinterpret_cast<const T*>(l.bytes().data()); }
template <typename T>
T* data(Literal& l) { return reinterpret_cast<T*>(l.bytes().data()); }

// The literal a kernel writes its one result into. `out` comes either empty (a fresh literal is
// made, zero-filled) or holding one destination of the result's type (an executable's arena slot,
// exec/buffer_plan.h), whose contents are garbage: `zero` clears it for kernels that add into
// their result, the others write every element. A kernel that declines after taking its result
// calls done(false), which leaves `out` as it came (accelerate's contract).
class Result {
 public:
  Result(const ir::Type& t, std::vector<Literal>& out, bool zero) : out_(out), fresh_(out.empty()) {
    if (fresh_) {
      out.emplace_back(t);
    } else {
      TESSERA_CHECK(out.size() == 1 && out[0].type() == t, "a destination of another type than {}", to_string(t));
      if (zero) std::memset(out[0].bytes().data(), 0, out[0].bytes().size());
    }
  }
  Literal& operator*() { return out_.back(); }
  Literal* operator->() { return &out_.back(); }
  bool fresh() const { return fresh_; }
  bool done(bool ok) {
    if (!ok && fresh_) out_.pop_back();
    return ok;
  }

 private:
  std::vector<Literal>& out_;
  bool fresh_;
};

// The element-wise kernels (accelerate_elementwise.cpp), on accelerate()'s contract.
bool binary(const Op& op, Operands in, std::vector<Literal>& out);
bool compare(const Op& op, Operands in, std::vector<Literal>& out);
bool select(const Op& op, Operands in, std::vector<Literal>& out);
bool iota(const Op& op, std::vector<Literal>& out);
bool constant(const Op& op, std::vector<Literal>& out);
bool convert(const Op& op, Operands in, std::vector<Literal>& out);

}  // namespace tessera::exec::accel
