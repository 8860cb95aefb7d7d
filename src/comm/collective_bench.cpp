// Collective benchmarks (see collective_bench.h): sizes, timing loops and nccl-tests' bandwidths.
#include "comm/collective_bench.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "comm/host_communicator.h"
#include "support/error.h"

namespace tessera::comm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::byte* touched_pages(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) support::fail("bench: cannot map {} bytes for the buffers", bytes);
  // First touch costs ~11 us per 4 KiB page here, 0.2 us with huge pages (DESIGN.md §6).
  madvise(p, bytes, MADV_HUGEPAGE);
  auto* f = static_cast<float*>(p);
  for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = static_cast<float>(i % 1024) * 0.25f;
  return static_cast<std::byte*>(p);
}

// One call of `op` on `bytes` (nccl-tests' sizes, collective_bench.h).
void run_op(Communicator& c, const Group& g, const std::string& op, size_t bytes, const BenchBuffers& b) {
  size_t n = g.size();
  if (op == "all_reduce") {
    c.all_reduce(op, g, ir::ElementType::f32, ReduceOp::Sum, b.in(bytes), b.out(bytes));
  } else if (op == "reduce_scatter") {
    c.reduce_scatter(op, g, ir::ElementType::f32, ReduceOp::Sum, b.in(bytes), b.out(bytes / n));
  } else if (op == "all_gather") {
    c.all_gather(op, g, b.in(bytes / n), b.out(bytes));
  } else if (op == "all_to_all") {
    c.all_to_all(op, g, b.in(bytes), b.out(bytes));
  } else if (op == "collective_permute") {  // a ring shift: member i receives from member i-1
    size_t me = index_in_group(op, g, c.device());
    c.permute(op, g, g[(me + n - 1) % n], b.in(bytes), b.out(bytes));
  } else {
    support::fail("bench: no collective {}", op);
  }
}

}  // namespace

const std::vector<std::string>& bench_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all",
                                               "collective_permute"};
  return ops;
}

double bus_factor(std::string_view op, int64_t n) {
  double d = static_cast<double>(n);
  if (op == "all_reduce") return 2.0 * (d - 1) / d;
  if (op == "reduce_scatter" || op == "all_gather" || op == "all_to_all") return (d - 1) / d;
  return 1.0;  // collective_permute, memcpy
}

BenchRecord bench_record(std::string op, std::string backend, int64_t devices, int64_t bytes, double median_us) {
  BenchRecord r{std::move(op), std::move(backend), devices, bytes, median_us, 0, 0};
  r.algbw_gbs = median_us > 0 ? static_cast<double>(bytes) / (median_us * 1e3) : 0;  // bytes/us/1e3 = GB/s
  r.busbw_gbs = r.algbw_gbs * bus_factor(r.op, devices);
  return r;
}

std::vector<int64_t> bench_sizes(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t s = 8; s < max_bytes; s *= 4) sizes.push_back(s);
  sizes.push_back(max_bytes);
  return sizes;
}

int64_t bench_bytes(std::string_view op, int64_t n, int64_t bytes) {
  int64_t unit = 4;  // f32
  if (op == "reduce_scatter" || op == "all_gather" || op == "all_to_all") unit *= n;
  return bytes / unit * unit;
}

std::vector<int64_t> parse_sizes(std::string_view text, std::string_view what) {
  std::vector<int64_t> sizes;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = std::min(text.find(',', at), text.size());
    std::string item(text.substr(at, end - at));
    int64_t unit = 1;
    if (!item.empty() && (item.back() == 'K' || item.back() == 'M')) {
      unit = item.back() == 'K' ? 1024 : 1024 * 1024;
      item.pop_back();
    }
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 12 ||
        std::stoll(item) == 0)
      support::fail("{}: '{}' is not a size in bytes (e.g. 8, 4K, 64M)", what, text.substr(at, end - at));
    sizes.push_back(std::stoll(item) * unit);
    at = end + 1;
  }
  return sizes;
}

int bench_calls(int64_t bytes) { return static_cast<int>(std::clamp<int64_t>((1 << 22) / std::max<int64_t>(bytes, 1), 1, 200)); }
int bench_batches(int64_t bytes) { return bytes >= (8 << 20) ? 5 : 9; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

BenchBuffers::BenchBuffers(size_t bytes) : bytes_(std::max<size_t>(bytes, 4096)) {
  in_ = touched_pages(bytes_);
  out_ = touched_pages(bytes_);
}

BenchBuffers::~BenchBuffers() {
  munmap(in_, bytes_);
  munmap(out_, bytes_);
}

std::vector<BenchRecord> bench_communicator(Communicator& comm, const Group& group, const std::vector<int64_t>& sizes,
                                            const std::string& backend) {
  auto n = static_cast<int64_t>(group.size());
  BenchBuffers buffers(static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end())));
  std::vector<BenchRecord> out;
  for (const std::string& op : bench_ops())
    for (int64_t requested : sizes) {
      int64_t bytes = bench_bytes(op, n, requested);
      if (bytes == 0) continue;
      auto b = static_cast<size_t>(bytes);
      for (int w = 0; w < 2; ++w) run_op(comm, group, op, b, buffers);
      int calls = bench_calls(bytes), batches = bench_batches(bytes);
      std::vector<double> samples;  // microseconds per call, one per batch
      for (int k = 0; k < batches; ++k) {
        comm.barrier("bench barrier", group);
        auto t = Clock::now();
        for (int i = 0; i < calls; ++i) run_op(comm, group, op, b, buffers);
        samples.push_back(seconds_since(t) * 1e6 / calls);
      }
      // The slowest device's time per batch, the same figure on every device.
      std::vector<double> slowest(samples.size());
      comm.all_reduce("bench samples", group, ir::ElementType::f64, ReduceOp::Max, std::as_bytes(std::span(samples)),
                      std::as_writable_bytes(std::span(slowest)));
      out.push_back(bench_record(op, backend, n, bytes, median(slowest)));
    }
  return out;
}

std::vector<BenchRecord> bench_host(int64_t n, const std::vector<int64_t>& sizes) {
  HostWorld world(n, std::chrono::seconds(120));
  Group group;
  for (int64_t d = 0; d < n; ++d) group.push_back(d);
  std::vector<std::vector<BenchRecord>> records(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      try {
        HostCommunicator c(world, d);
        records[static_cast<size_t>(d)] = bench_communicator(c, group, sizes, "host");
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(d)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int64_t d = 0; d < n; ++d)
    if (!errors[static_cast<size_t>(d)].empty())
      support::fail("bench on host device {}: {}", d, errors[static_cast<size_t>(d)]);
  return records[0];
}

std::vector<BenchRecord> bench_memcpy(const std::vector<int64_t>& sizes) {
  BenchBuffers buffers(static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end())));
  std::vector<BenchRecord> out;
  for (int64_t bytes : sizes) {
    auto b = static_cast<size_t>(bytes);
    std::memcpy(buffers.out(b).data(), buffers.in(b).data(), b);
    int calls = bench_calls(bytes), batches = bench_batches(bytes);
    std::vector<double> samples;
    for (int k = 0; k < batches; ++k) {
      auto t = Clock::now();
      for (int i = 0; i < calls; ++i) {
        std::memcpy(buffers.out(b).data(), buffers.in(b).data(), b);
        // Keeps the compiler from merging or dropping the repeated copies.
        asm volatile("" : : "r"(buffers.out(b).data()) : "memory");
      }
      samples.push_back(seconds_since(t) * 1e6 / calls);
    }
    out.push_back(bench_record("memcpy", "memcpy", 1, bytes, median(samples)));
  }
  return out;
}

BenchRecord bench_memcpy_threads(int64_t bytes, int64_t threads) {
  auto b = static_cast<size_t>(bytes);
  std::vector<std::unique_ptr<BenchBuffers>> buffers;
  for (int64_t t = 0; t < threads; ++t) buffers.push_back(std::make_unique<BenchBuffers>(b));
  int calls = bench_calls(bytes), batches = bench_batches(bytes);
  std::vector<double> samples;
  for (int k = 0; k <= batches; ++k) {  // batch 0 warms up
    auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int64_t t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        const BenchBuffers& buf = *buffers[static_cast<size_t>(t)];
        for (int i = 0; i < calls; ++i) {
          std::memcpy(buf.out(b).data(), buf.in(b).data(), b);
          asm volatile("" : : "r"(buf.out(b).data()) : "memory");
        }
      });
    for (auto& w : workers) w.join();
    if (k > 0) samples.push_back(seconds_since(start) * 1e6 / calls);
  }
  return bench_record("memcpy", "memcpy", threads, bytes * threads, median(samples));
}

}  // namespace tessera::comm
