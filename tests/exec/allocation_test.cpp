// Heap allocations in the steady state of a training step (issue #14's acceptance): this binary
// replaces the global operator new, so every C++ allocation of every thread (array buffers,
// vectors, std::function, threads' state) adds to one counter. Counted over steps 3 to 10 of the
// AdamW TrainingStep of issue #6's configuration:
//   - one device, the step's Executable run directly in a RunContext (Executable::run_into, the
//     batch and the step's scalars lent, parameters and moments donated, the loss refilled): what
//     the executable itself allocates per step once its arena is laid out;
//   - 4 host devices under FSDP through Session::sharded_program with the step's donations
//     (ShardedProgram::execute into the outputs it keeps): what a whole training step allocates,
//     runtime included.
// Both must be 0 (docs/PERFORMANCE.md, "Allocations of a training step", says how).
#include <gtest/gtest.h>

// gcc 12 inlines this file's operator delete (free) into std::vector's destructor and then warns
// that the size it passes, computed from the freed pointer's value, uses it after free: a false
// positive of the replaced operator, not a read of freed memory.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <new>

#include "exec/executable.h"
#include "interp/interpreter.h"
#include "nn/capture.h"
#include "nn/config.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/session.h"
#include "support/threads.h"

namespace {

std::atomic<int64_t> allocations{0};

// TESSERA_ALLOC_TRACE=1: a histogram of the counted allocations by call stack (a fixed table, so
// that recording allocates nothing), printed as module+offset for addr2line after each test.
constexpr int kDepth = 14;
struct Trace {
  void* frames[kDepth];
  int depth;
  int64_t count;
};
constexpr size_t kTraces = 8192;
Trace traces[kTraces];
std::atomic<bool> tracing{false};
bool trace_enabled = false;  // TESSERA_ALLOC_TRACE is set
std::atomic_flag trace_lock = ATOMIC_FLAG_INIT;
thread_local bool in_trace = false;

void record() {
  if (!tracing.load(std::memory_order_relaxed) || in_trace) return;
  in_trace = true;
  void* f[kDepth + 2];
  int n = backtrace(f, kDepth + 2) - 2;  // less the two innermost frames (the allocator's own)
  if (n > 0) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; ++i) h = (h ^ reinterpret_cast<uintptr_t>(f[i + 2])) * 1099511628211ull;
    while (trace_lock.test_and_set(std::memory_order_acquire)) {}
    for (size_t k = 0; k < kTraces; ++k) {
      Trace& t = traces[(h + k) % kTraces];
      if (t.count == 0) {
        std::copy(f + 2, f + 2 + n, t.frames);
        t.depth = n;
      } else if (t.depth != n || !std::equal(f + 2, f + 2 + n, t.frames)) {
        continue;
      }
      ++t.count;
      break;
    }
    trace_lock.clear(std::memory_order_release);
  }
  in_trace = false;
}

// Traces the allocations of the counted steps only (between trace_on and trace_off).
void trace_on() {
  if (!trace_enabled && std::getenv("TESSERA_ALLOC_TRACE") != nullptr) {
    void* f[4];
    backtrace(f, 4);  // loads the unwinder before anything is counted
    trace_enabled = true;
  }
  tracing = trace_enabled;
}
void trace_off() { tracing = false; }

void print_trace() {
  tracing = false;
  std::vector<Trace*> all;
  for (Trace& t : traces)
    if (t.count > 0) all.push_back(&t);
  std::sort(all.begin(), all.end(), [](const Trace* a, const Trace* b) { return a->count > b->count; });
  for (Trace* t : all) {
    std::printf("TRACE %lld", static_cast<long long>(t->count));
    for (int i = 0; i < t->depth; ++i) {
      Dl_info d;
      if (dladdr(t->frames[i], &d) && d.dli_fname)
        std::printf(" %s+0x%lx", d.dli_fname,
                    static_cast<unsigned long>(reinterpret_cast<uintptr_t>(t->frames[i]) - reinterpret_cast<uintptr_t>(d.dli_fbase) - 1));
    }
    std::printf("\n");
    t->count = 0;
  }
}

void* count_malloc(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  record();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* counted_aligned(std::size_t n, std::align_val_t a) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  record();
  std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al + (n == 0 ? al : 0))) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) { return count_malloc(n); }
void* operator new[](std::size_t n) { return count_malloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new(std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace tessera {
namespace {

// Issue #6's configuration (nn/nn_test_util's acceptance_config): 78,144 parameters, batch 8 x 16.
nn::Config config() {
  nn::Config c;
  c.vocab = 256;
  c.d_model = 64;
  c.layers = 2;
  c.heads = 8;
  c.kv_heads = 4;
  c.ffn = 172;
  c.batch = 8;
  c.seq = 16;
  return c;
}

ir::Literal tokens(const nn::Config& c) {
  std::vector<int64_t> t(static_cast<size_t>(c.batch * c.seq));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int64_t>((i * 37 + 11) % static_cast<size_t>(c.vocab));
  return ir::Literal::from_ints(ir::i32({c.batch, c.seq}), t);
}

constexpr int kFirst = 3, kLast = 10;  // the steps counted (0 first)

// The thread budget fixed for a test, so that the counts do not depend on this machine's cores:
// with free tokens, kernels hand chunks to workers, and that allocates.
struct ThreadLimit {
  explicit ThreadLimit(int64_t n) { tessera::support::set_thread_limit(n); }
  ~ThreadLimit() { tessera::support::set_thread_limit(0); }
};

// The counts are deterministic (what kernels keep from run to run lives in each run context's
// cache, not per thread). When the buffer plan landed: 36,368 and 172,816; then 584 and 4,184;
// with the execution plan, 0.
constexpr int64_t kExecutableBound = 0;
constexpr int64_t kSessionBound = 0;

TEST(Allocations, ExecutableRunOfATrainingStepInARunContext) {
  ThreadLimit one(1);  // the run's own thread only
  nn::Config c = config();
  ir::Module m("alloc");
  nn::Programs p = nn::capture(m, nn::TrainingStep{nn::CausalLM(c)}.with(nn::AdamW{}));
  auto e = exec::Executable::compile(*m.find_function(p.train_step), exec::CompileOptions{&m});
  ASSERT_TRUE(e->planned());
  std::unique_ptr<exec::RunContext> context = e->make_context();
  const ir::Literal t = tokens(c);
  const size_t state = p.step_input();  // parameters and moments: inputs 0.., results 1..
  std::vector<ir::Literal> in = nn::train_step_inputs(p, nn::init_parameters(c, 1), 1, t, t);
  // The batch is lent (the caller's, read in place); the parameters and moments are donated, and
  // come back in their own buffers; the loss is refilled in place from the second step on.
  std::vector<uint8_t> lent(state + 3, 0);
  lent[p.step_input()] = lent[p.tokens_input()] = lent[p.tokens_input() + 1] = 1;
  std::vector<ir::Literal> out;
  int64_t counted = 0;
  for (int step = 0; step <= kLast; ++step) {
    // The step's scalars are made outside the count (the caller's data).
    in[p.step_input()] = p.step_scalars(step + 1);
    if (step >= kFirst) trace_on();
    int64_t before = allocations.load();
    e->run_into(in, lent, out, interp::Options{}, *context);
    if (step >= kFirst) counted += allocations.load() - before;
    trace_off();
    ASSERT_EQ(out.size(), state + 1);
    ASSERT_TRUE(std::isfinite(out[0].get_double(0))) << "step " << step;
    ASSERT_EQ(in[p.tokens_input()], t) << "the lent batch is handed back as it was";
    for (size_t i = 0; i < state; ++i) in[i] = std::move(out[i + 1]);
  }
  print_trace();
  // The same steps without a run context (every value a fresh buffer), for comparison.
  int64_t fresh = 0;
  for (int step = 0; step <= kLast; ++step) {
    in[p.step_input()] = p.step_scalars(step + 1);
    in[p.tokens_input()] = t;
    in[p.tokens_input() + 1] = t;
    int64_t before = allocations.load();
    out = e->run(std::move(in), interp::Options{});
    if (step >= kFirst) fresh += allocations.load() - before;
    in.assign(state + 3, ir::Literal());
    for (size_t i = 0; i < state; ++i) in[i] = std::move(out[i + 1]);
  }
  std::printf("executable, one device: %lld allocations in steps %d-%d (%lld without a run context)\n",
              static_cast<long long>(counted), kFirst, kLast, static_cast<long long>(fresh));
  EXPECT_EQ(counted, kExecutableBound);
}

TEST(Allocations, TrainingStepOnFourHostDevicesUnderFsdp) {
  ThreadLimit four(4);  // one per device, none free for kernels' chunks
  nn::Config c = config();
  ir::Module m("alloc");
  nn::Programs p = nn::capture(
      m, nn::TrainingStep{nn::CausalLM(c)}.with(nn::AdamW{}).sharded(nn::fsdp(ir::Mesh{"mesh", {{"data", 4}}, {}}, "data")));
  runtime::Session session = runtime::Session::host(4);
  runtime::ShardedProgram sp = session.sharded_program(session.compile(m, p.train_step), p.output_aliases);
  const ir::Literal t = tokens(c);
  std::vector<ir::Literal> init = nn::train_step_inputs(p, nn::init_parameters(c, 1), 1, t, t);
  std::vector<runtime::ShardedBuffer> in;
  for (size_t i = 0; i < init.size(); ++i) in.push_back(sp.stage(i, init[i]));
  const runtime::ShardedBuffer tok = in[p.tokens_input()], tgt = in[p.tokens_input() + 1];
  const size_t state = p.step_input();
  std::vector<runtime::ShardedBuffer> out;  // kept: the loss is refilled, the state comes back in it
  int64_t counted = 0;
  for (int step = 0; step <= kLast; ++step) {
    in[p.step_input()] = sp.stage(p.step_input(), p.step_scalars(step + 1));
    in[p.tokens_input()] = tok;
    in[p.tokens_input() + 1] = tgt;
    if (step >= kFirst) trace_on();
    int64_t before = allocations.load();
    sp.execute(in, out);
    if (step >= kFirst) counted += allocations.load() - before;
    trace_off();
    ASSERT_TRUE(std::isfinite(sp.fetch(out[0]).get_double(0))) << "step " << step;
    for (size_t i = 0; i < state; ++i) in[i] = std::move(out[i + 1]);
  }
  print_trace();
  std::printf("session, 4 devices, fsdp: %lld allocations in steps %d-%d\n", static_cast<long long>(counted), kFirst,
              kLast);
  EXPECT_EQ(counted, kSessionBound);
}

}  // namespace
}  // namespace tessera
