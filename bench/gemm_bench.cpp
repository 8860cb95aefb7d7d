// SGEMM on the shape classes of the CausalLM training step: OpenBLAS, BLIS and oneDNN side by side.
//
// Builds the AdamW training step of the tiny and the larger configuration of
// bench/train_vs_torch.sh on one host device (the program the runtime runs), plans each of its
// dot_generals as the fast kernels do (exec::plan_contraction) and groups the GEMM calls into
// classes: M, N, K, transpose flags, leading dimensions and calls per dot_general (attention's
// batch), each labelled with what it computes (a projection's forward, input gradient dX or weight
// gradient dW; attention's batched products). A class is timed as the kernels call it
// (exec::gemm_call): a product cut into row or column pieces for threads is timed as those pieces,
// with the whole product's leading dimensions (a library may run a piece of a wide matrix at half
// the rate of the whole: docs/PERFORMANCE.md, "Session 23"). Each class is timed on each library, single-threaded, with the
// libraries interleaved repetition by repetition so that a change of load on this shared machine
// hits them alike; the figure is the median over repetitions. Each library's result on each class
// is first checked against a double-precision product (error within K·2^-24 of the sum of |a·b|).
//
// The libraries are loaded with dlopen (BLIS with RTLD_DEEPBIND: it exports cblas_sgemm too), so
// none is a build dependency and one that is not installed is reported as missing. OpenBLAS is the
// one Tessera links; OPENBLAS_CORETYPE, if set, applies to it as usual.
//
// Usage: gemm_bench [--reps N] [--min-ms T] [--config tiny|larger] [--batch B] [--sweep-ldb]
// --batch: sequences per step instead of 8 (4 gives the per-device products of 2 data-parallel
// devices). --sweep-ldb: instead, A·B products whose B rows lie ld floats apart, ld from packed
// to 8192 (run_sweep).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "exec/contraction.h"
#include "nn/capture.h"
#include "runtime/session.h"

using namespace tessera;

namespace {

// One dot_general's GEMM calls as the fast kernels make them (exec::gemm_call): `batch` products
// C[m x n] += op(A)·op(B), each possibly cut into pieces of rows or columns that threads share,
// read and written with the plan's leading dimensions. A cut product's pieces keep the whole
// product's strides, which is what some libraries are sensitive to.
struct Gemm {
  int64_t m, n, k, batch;
  bool ta, tb;
  int64_t lda, ldb, ldc;
  std::vector<exec::GemmCall> calls;  // what runs: batch x pieces
  auto key() const { return std::tuple(m, n, k, batch, ta, tb, lda, ldb, ldc); }
  bool operator<(const Gemm& o) const { return key() < o.key(); }
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
  int64_t pieces() const { return int64_t(calls.size()) / batch; }
};

// ---- The libraries, through dlopen ----

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using CblasDgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                            int);
using BliSgemm = void (*)(int, int, long, long, long, const float*, const float*, long, long, const float*, long, long,
                          const float*, float*, long, long);
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);

struct Library {
  std::string name, detail;
  CblasSgemm cblas = nullptr;
  BliSgemm blis = nullptr;
  DnnlSgemm dnnl = nullptr;
  bool ok() const { return cblas || blis || dnnl; }

  // C (+)= A·B for call `c` of g on the whole operands a, b and result out.
  void gemm(const Gemm& g, const exec::GemmCall& c, const float* a, const float* b, float beta, float* out) const {
    a += c.a, b += c.b, out += c.c;
    if (cblas) {
      cblas(101, g.ta ? 112 : 111, g.tb ? 112 : 111, int(c.m), int(c.n), int(g.k), 1.0f, a, int(g.lda), b, int(g.ldb),
            beta, out, int(g.ldc));
    } else if (blis) {
      float one = 1;  // BLIS takes general strides: (row, column) steps of each matrix
      blis(0, 0, c.m, c.n, g.k, &one, a, g.ta ? 1 : g.lda, g.ta ? g.lda : 1, b, g.tb ? 1 : g.ldb, g.tb ? g.ldb : 1, &beta,
           out, g.ldc, 1);
    } else {
      dnnl(g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', c.m, c.n, g.k, 1.0f, a, g.lda, b, g.ldb, beta, out, g.ldc);
    }
  }
};

void* open_library(const char* file, int flags, std::string& detail) {
  void* h = dlopen(file, flags);
  if (!h) detail = fmt::format("not loaded: {}", dlerror());
  return h;
}

std::vector<Library> load_libraries(CblasDgemm& dgemm) {
  std::vector<Library> libs(3);
  libs[0].name = "OpenBLAS";
  if (void* h = open_library("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL, libs[0].detail)) {
    libs[0].cblas = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    dgemm = reinterpret_cast<CblasDgemm>(dlsym(h, "cblas_dgemm"));
    reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"))(1);
    auto config = reinterpret_cast<const char* (*)()>(dlsym(h, "openblas_get_config"));
    auto core = reinterpret_cast<const char* (*)()>(dlsym(h, "openblas_get_corename"));
    libs[0].detail = fmt::format("{}; core {}", config(), core());
  }
  libs[1].name = "BLIS";
  if (void* h = open_library("libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND, libs[1].detail)) {
    libs[1].blis = reinterpret_cast<BliSgemm>(dlsym(h, "bli_sgemm"));
    reinterpret_cast<void (*)(long)>(dlsym(h, "bli_thread_set_num_threads"))(1);
    auto version = reinterpret_cast<const char* (*)()>(dlsym(h, "bli_info_get_version_str"));
    auto arch = reinterpret_cast<int (*)()>(dlsym(h, "bli_arch_query_id"));
    auto arch_name = reinterpret_cast<const char* (*)(int)>(dlsym(h, "bli_arch_string"));
    libs[1].detail = fmt::format("{}; arch {}", version(), arch_name(arch()));
  }
  libs[2].name = "oneDNN";
  if (void* h = open_library("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL, libs[2].detail)) {
    libs[2].dnnl = reinterpret_cast<DnnlSgemm>(dlsym(h, "dnnl_sgemm"));
    // This binary links Tessera, hence oneDNN and its OpenMP runtime, which read OMP_NUM_THREADS
    // before main set it: the calling thread's team size is set here instead, or every call would
    // run on both cores and leave a spinning worker behind while the other libraries are timed.
    if (void* set = dlsym(RTLD_DEFAULT, "omp_set_num_threads")) reinterpret_cast<void (*)(int)>(set)(1);
    struct Version {
      int major, minor, patch;
      const char* hash;
      unsigned cpu_runtime, gpu_runtime;
    };
    auto version = reinterpret_cast<const Version* (*)()>(dlsym(h, "dnnl_version"))();
    int isa = reinterpret_cast<int (*)()>(dlsym(h, "dnnl_get_effective_cpu_isa"))();
    std::map<int, std::string> isas = {{0x7, "avx2"}, {0x27, "avx512_core"}, {0x67, "avx512_core_vnni"},
                                       {0xe7, "avx512_core_bf16"}, {0x3e7, "avx512_core_amx"}, {0x407, "avx2_vnni"}};
    libs[2].detail = fmt::format("{}.{}.{}; isa {}", version->major, version->minor, version->patch,
                                 isas.count(isa) ? isas[isa] : fmt::format("{:#x}", isa));
  }
  return libs;
}

// ---- The shape classes of a training step ----

struct Class {
  Gemm g;
  int per_step = 0;  // dot_generals of this class in one step
  int copies = 0;    // of them, how many copy an operand first (no stride expression)
  std::string label;
};

// What a GEMM computes in the CausalLM of `c`: projections have one dimension of b·s tokens;
// attention's products are batched over b·kv_heads.
std::string label(const Gemm& g, const nn::Config& c) {
  int64_t t = c.batch * c.seq, d = c.d_model, hd = c.head_dim(), s = c.seq, sg = c.seq * (c.heads / c.kv_heads);
  if (g.batch > 1) {
    if (g.m == sg && g.n == s && g.k == hd) return "attn scores QKᵀ / dP";
    if (g.m == sg && g.n == hd && g.k == s) return "attn PV / dQ";
    if (g.m == s && g.n == hd && g.k == sg) return "attn dK";
    if (g.m == hd && g.n == s && g.k == sg) return "attn dV";
    return "attn (other)";
  }
  struct W {
    const char* name;
    int64_t in, out;
  };
  std::vector<W> ws = {{"q", d, c.heads * hd},  {"k/v", d, c.kv_heads * hd}, {"o", c.heads * hd, d},
                       {"gate/up", d, c.ffn}, {"down", c.ffn, d},           {"head", d, c.vocab}};
  auto names = [&](int64_t in, int64_t out) {
    std::string r;
    for (const W& w : ws)
      if (w.in == in && w.out == out) r += (r.empty() ? "" : ", ") + std::string(w.name);
    return r;
  };
  // x[t, in]·W[in, out] reads W as is; dX = dY·Wᵀ reads it transposed; dW = dYᵀ·x sums over t.
  std::string r;
  if (g.k == t) r = names(g.n, g.m) + " dW";
  else if (g.m == t && !g.tb) r = names(g.k, g.n) + " fwd";
  else if (g.m == t) r = names(g.n, g.k) + " dX";
  return r.empty() || r[0] == ' ' ? "other" : r;
}

void collect(const ir::Block& block, const nn::Config& c, std::map<Gemm, Class>& classes) {
  for (const auto& op : block.ops()) {
    for (const auto& region : op->regions()) collect(*region, c, classes);
    if (op->kind() != ir::OpKind::DotGeneral) continue;
    exec::ContractionPlan p = exec::plan_contraction(op->operand(0)->type().shape, op->operand(1)->type().shape,
                                                     op->attrs().get<ir::DotDims>("dot_dimension_numbers"));
    Gemm g{p.m, p.n, p.k, p.calls, p.ta, p.tb, p.lda, p.ldb, p.ldc, {}};
    for (int64_t t = 0; t < exec::gemm_calls(p); ++t) g.calls.push_back(exec::gemm_call(p, t));
    Class& cl = classes[g];
    cl.g = g;
    cl.per_step++;
    cl.copies += p.lhs_copy.needed || p.rhs_copy.needed;
    cl.label = label(g, c);
  }
}

std::vector<Class> step_classes(const nn::Config& c) {
  nn::CausalLM model(c);
  ir::Module m("bench");
  nn::Programs p = nn::capture(m, nn::TrainingStep{model}.with(nn::AdamW{}));
  runtime::Session session = runtime::Session::host(1);
  runtime::CompiledProgram compiled = session.compile(m, p.train_step);
  std::map<Gemm, Class> classes;
  collect(compiled.local_function().body(), c, classes);
  std::vector<Class> out;
  for (auto& [g, cl] : classes) out.push_back(cl);
  std::sort(out.begin(), out.end(), [](const Class& a, const Class& b) {
    return a.label != b.label ? a.label < b.label : a.g < b.g;
  });
  return out;
}

// ---- Measuring ----

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The whole operands and result of a class's calls, laid out as the plan reads and writes them.
struct Operands {
  std::vector<float> a, b, c;
};

// One past the last element of a rows x cols matrix at `offset` with rows `ld` apart.
size_t extent(int64_t offset, int64_t rows, int64_t cols, int64_t ld) { return size_t(offset + (rows - 1) * ld + cols); }

Operands make_operands(const Gemm& g, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  size_t na = 0, nb = 0, nc = 0;
  for (const exec::GemmCall& c : g.calls) {
    na = std::max(na, g.ta ? extent(c.a, g.k, c.m, g.lda) : extent(c.a, c.m, g.k, g.lda));
    nb = std::max(nb, g.tb ? extent(c.b, c.n, g.k, g.ldb) : extent(c.b, g.k, c.n, g.ldb));
    nc = std::max(nc, extent(c.c, c.m, c.n, g.ldc));
  }
  Operands o;
  o.a.resize(na);
  o.b.resize(nb);
  o.c.assign(nc, 0.0f);
  for (float& x : o.a) x = u(rng);
  for (float& x : o.b) x = u(rng);
  return o;
}

void run_class(const Library& lib, const Gemm& g, Operands& o, float beta) {
  for (const exec::GemmCall& c : g.calls) lib.gemm(g, c, o.a.data(), o.b.data(), beta, o.c.data());
}

// The largest error of `lib` on class g, in units of K·2^-24·(|A|·|B|) (the bound of a sum of K
// f32 products in any order): at most 1 is right. NaN counts as wrong. The first 8 calls are
// checked, each against the same call in f64 on the same layout.
double check(const Library& lib, const Gemm& g, Operands& o, CblasDgemm dgemm) {
  std::fill(o.c.begin(), o.c.end(), 0.0f);
  run_class(lib, g, o, 0.0f);
  std::vector<double> a(o.a.begin(), o.a.end()), b(o.b.begin(), o.b.end()), aa(a.size()), ab(b.size());
  std::vector<double> c(o.c.size()), bound(o.c.size());
  for (size_t j = 0; j < a.size(); ++j) aa[j] = std::abs(a[j]);
  for (size_t j = 0; j < b.size(); ++j) ab[j] = std::abs(b[j]);
  int ta = g.ta ? 112 : 111, tb = g.tb ? 112 : 111;
  double worst = 0;
  for (size_t i = 0; i < std::min<size_t>(g.calls.size(), 8); ++i) {
    const exec::GemmCall& x = g.calls[i];
    dgemm(101, ta, tb, int(x.m), int(x.n), int(g.k), 1.0, a.data() + x.a, int(g.lda), b.data() + x.b, int(g.ldb), 0.0,
          c.data() + x.c, int(g.ldc));
    dgemm(101, ta, tb, int(x.m), int(x.n), int(g.k), 1.0, aa.data() + x.a, int(g.lda), ab.data() + x.b, int(g.ldb), 0.0,
          bound.data() + x.c, int(g.ldc));
    for (int64_t r = 0; r < x.m; ++r)
      for (int64_t col = 0; col < x.n; ++col) {
        size_t j = size_t(x.c + r * g.ldc + col);
        double err = std::abs(double(o.c[j]) - c[j]) / (double(g.k) * 0x1p-24 * bound[j] + 1e-300);
        if (!(err <= worst)) worst = std::isnan(err) ? INFINITY : err;
      }
  }
  return worst;
}

struct Timing {
  double seconds = 0;  // median time of one step's worth of one class's calls (one dot_general)
  double error = 0;
};

std::string gflops(double flops, double s) { return s > 0 ? fmt::format("{:.1f}", flops / s * 1e-9) : "–"; }

// Times class g on every library, interleaved repetition by repetition, into timing[library]
// (the error checked first); adds each library's wall and CPU time while timing.
void time_class(const std::vector<Library>& libs, const Gemm& g, std::mt19937& rng, CblasDgemm dgemm, int reps,
                double min_seconds, std::vector<Timing>& timing, std::vector<double>& cpu, std::vector<double>& wall) {
  Operands o = make_operands(g, rng);
  for (size_t li = 0; li < libs.size(); ++li)
    if (libs[li].ok()) timing[li].error = check(libs[li], g, o, dgemm);
  // Calls per repetition: enough for min_seconds on OpenBLAS (warm-up included).
  double t0 = now();
  run_class(libs[0], g, o, 1.0f);
  int iters = std::max(1, int(min_seconds / std::max(now() - t0, 1e-7)));
  std::vector<std::vector<double>> samples(libs.size());
  for (int r = 0; r < reps; ++r)
    for (size_t li = 0; li < libs.size(); ++li) {
      if (!libs[li].ok()) continue;
      if (r == 0) run_class(libs[li], g, o, 1.0f);  // warm-up: packing buffers, JIT kernels
      double w0 = now(), c0 = cpu_now();
      for (int i = 0; i < iters; ++i) run_class(libs[li], g, o, 1.0f);
      double w = now() - w0;
      samples[li].push_back(w / iters);
      wall[li] += w;
      cpu[li] += cpu_now() - c0;
    }
  for (size_t li = 0; li < libs.size(); ++li) {
    auto& s = samples[li];
    if (s.empty()) continue;
    std::sort(s.begin(), s.end());
    timing[li].seconds = s[s.size() / 2];
  }
}

void run_config(const std::string& name, const nn::Config& c, const std::vector<Library>& libs, CblasDgemm dgemm,
                int reps, double min_seconds) {
  std::vector<Class> classes = step_classes(c);
  std::mt19937 rng(1);
  std::vector<std::vector<Timing>> timing(classes.size(), std::vector<Timing>(libs.size()));
  std::vector<double> cpu(libs.size()), wall(libs.size());
  for (size_t ci = 0; ci < classes.size(); ++ci)
    time_class(libs, classes[ci].g, rng, dgemm, reps, min_seconds, timing[ci], cpu, wall);

  fmt::print("\n### {} (vocab {}, d_model {}, {} layers, {}/{} heads, FFN {}, batch {}x{})\n\n", name, c.vocab,
             c.d_model, c.layers, c.heads, c.kv_heads, c.ffn, c.batch, c.seq);
  fmt::print("| class | M x N x K | op(A), op(B) | calls | pieces (ldb) | per step | copied | GFLOP/step |");
  for (const Library& l : libs) fmt::print(" {} GFLOP/s |", l.name);
  fmt::print("\n|---|---|---|---|---|---|---|---|");
  for (size_t i = 0; i < libs.size(); ++i) fmt::print("---|");
  fmt::print("\n");
  std::vector<double> step_time(libs.size());
  double step_flops = 0;
  for (size_t ci = 0; ci < classes.size(); ++ci) {
    const Class& cl = classes[ci];
    const Gemm& g = cl.g;
    double f = g.flops() * cl.per_step;
    step_flops += f;
    std::string pieces = g.pieces() == 1 ? fmt::format("1 ({})", g.ldb)
                                         : fmt::format("{} of {} x {} ({})", g.pieces(), g.calls[0].m, g.calls[0].n, g.ldb);
    fmt::print("| {} | {} x {} x {} | {}, {} | {} | {} | {} | {} | {:.3f} |", cl.label, g.m, g.n, g.k, g.ta ? "T" : "N",
               g.tb ? "T" : "N", g.batch, pieces, cl.per_step, cl.copies, f * 1e-9);
    for (size_t li = 0; li < libs.size(); ++li) {
      const Timing& t = timing[ci][li];
      step_time[li] += t.seconds * cl.per_step;
      fmt::print(" {}{} |", gflops(g.flops(), t.seconds), t.error > 1 ? fmt::format(" (WRONG: {:.1f})", t.error) : "");
    }
    fmt::print("\n");
  }
  fmt::print("| **all contractions of one step** | | | | | | | {:.3f} |", step_flops * 1e-9);
  for (size_t li = 0; li < libs.size(); ++li)
    fmt::print(" **{}** ({:.1f} ms) |", gflops(step_flops, step_time[li]), step_time[li] * 1e3);
  fmt::print("\n\nLargest error per library (units of K·2^-24·|A|·|B|; at most 1 is right):");
  for (size_t li = 0; li < libs.size(); ++li) {
    double worst = 0;
    for (auto& row : timing) worst = std::max(worst, row[li].error);
    fmt::print(" {} {:.3f};", libs[li].name, worst);
  }
  fmt::print("\nCPU time / wall time while timing (1.00: one thread):");
  for (size_t li = 0; li < libs.size(); ++li) fmt::print(" {} {:.2f};", libs[li].name, wall[li] > 0 ? cpu[li] / wall[li] : 0);
  fmt::print("\n");
}

// --sweep-ldb: single products of A and B as stored, K 256, whose B and C are n columns of
// matrices with rows `ld` floats apart (a column piece of a wider matrix, as contraction.cpp cuts
// the LM head's forward): where a library's rate depends on the stride alone (exec/gemm.h's
// kOpenBlasWideB). ld = n is the packed matrix.
void run_sweep(const std::vector<Library>& libs, CblasDgemm dgemm, int reps, double min_seconds) {
  std::mt19937 rng(1);
  std::vector<double> cpu(libs.size()), wall(libs.size());
  fmt::print("\n### A·B with B's and C's rows ld floats apart (M x n x 256, N, N; GFLOP/s)\n\n| M | n | ld |");
  for (const Library& l : libs) fmt::print(" {} |", l.name);
  fmt::print("\n|---|---|---|");
  for (size_t i = 0; i < libs.size(); ++i) fmt::print("---|");
  fmt::print("\n");
  const int64_t k = 256;
  for (int64_t m : {64, 256, 512, 1024})
    for (int64_t n : {128, 512, 1024})
      for (int64_t ld : {int64_t{0}, int64_t{768}, int64_t{1024}, int64_t{2048}, int64_t{2560}, int64_t{4096},
                         int64_t{4112}, int64_t{8192}}) {
        if (ld == 0) ld = n;                 // the packed matrix first
        else if (ld <= n) continue;          // strides at or below n: the packed row already
        Gemm g{m, n, k, 1, false, false, k, ld, ld, {exec::GemmCall{m, n, 0, 0, 0}}};
        std::vector<Timing> t(libs.size());
        time_class(libs, g, rng, dgemm, reps, min_seconds, t, cpu, wall);
        fmt::print("| {} | {} | {}{} |", m, n, ld, ld == n ? " (packed)" : "");
        for (size_t li = 0; li < libs.size(); ++li)
          fmt::print(" {}{} |", gflops(g.flops(), t[li].seconds), t[li].error > 1 ? " (WRONG)" : "");
        fmt::print("\n");
      }
}

}  // namespace

int main(int argc, char** argv) {
  // One thread each, for an OpenMP runtime that starts only when BLIS or oneDNN is loaded below (a
  // build without oneDNN); where Tessera links oneDNN the runtime has read the environment
  // already, and load_libraries sets oneDNN's team itself.
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("BLIS_NUM_THREADS", "1", 1);
  int reps = 7;
  double min_ms = 20;
  std::string only;
  int64_t batch = 8;
  bool sweep = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--sweep-ldb") sweep = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--sweep-ldb") {
      --i;  // a flag without a value
      continue;
    }
    if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--min-ms") min_ms = std::atof(argv[i + 1]);
    else if (a == "--config") only = argv[i + 1];
    else if (a == "--batch") batch = std::atoi(argv[i + 1]);
  }
  CblasDgemm dgemm = nullptr;
  std::vector<Library> libs = load_libraries(dgemm);
  if (!dgemm) {
    fmt::print(stderr, "OpenBLAS (the reference for the checks) did not load\n");
    return 1;
  }
  fmt::print("SGEMM, single-threaded, median of {} repetitions of at least {} ms each\n", reps, min_ms);
  for (const Library& l : libs) fmt::print("* {}: {}\n", l.name, l.detail);
  // The configurations of bench/train_vs_torch.sh.
  nn::Config tiny, larger;
  tiny.vocab = 256, tiny.d_model = 64, tiny.layers = 2, tiny.heads = 8, tiny.kv_heads = 4, tiny.ffn = 172;
  tiny.batch = batch, tiny.seq = 16;
  larger.vocab = 4096, larger.d_model = 256, larger.layers = 4, larger.heads = 8, larger.kv_heads = 4;
  larger.ffn = 684, larger.batch = batch, larger.seq = 128;
  if (batch < 1) {
    fmt::print(stderr, "--batch {}: expected a positive number\n", batch);
    return 1;
  }
  if (sweep) {
    run_sweep(libs, dgemm, reps, min_ms * 1e-3);
    return 0;
  }
  if (only.empty() || only == "tiny") run_config("tiny", tiny, libs, dgemm, reps, min_ms * 1e-3);
  if (only.empty() || only == "larger") run_config("larger", larger, libs, dgemm, reps, min_ms * 1e-3);
  return 0;
}
