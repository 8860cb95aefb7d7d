// Collective benchmarks as nccl-tests measures them: the median time of a collective of each size,
// and its algorithm and bus bandwidth (DESIGN.md §3).
//
// Sizes follow nccl-tests: `bytes` is the whole buffer — the all-reduce's operand, the
// all-gather's result (each device contributes bytes/n), the reduce-scatter's operand (each device
// keeps bytes/n), each device's all-to-all buffer, and the permuted buffer. algbw = bytes / time;
// busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather, reduce-scatter and
// all-to-all, x 1 for a permute (a send and a receive per device) and for memcpy.
//
// Timing: buffers are allocated once for the largest size, touched (huge pages advised) and
// warmed by two untimed calls per size; then repeated batches of back-to-back calls, each batch
// started by a barrier; a batch's time per call is the slowest device's, and the figure is the
// median over batches. The devices agree on it by an all-reduce (max) of their samples.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"

namespace tessera::comm {

struct BenchRecord {
  std::string op;       // all_reduce, reduce_scatter, all_gather, all_to_all, collective_permute, memcpy
  std::string backend;  // host, mpi, openmpi, memcpy
  int64_t devices = 0;
  int64_t bytes = 0;
  double median_us = 0, algbw_gbs = 0, busbw_gbs = 0;
};

// The ops `tessera bench collectives` measures, in its order.
const std::vector<std::string>& bench_ops();
// nccl-tests' bus-bandwidth factor of `op` on n devices.
double bus_factor(std::string_view op, int64_t n);
BenchRecord bench_record(std::string op, std::string backend, int64_t devices, int64_t bytes, double median_us);
// The sizes 8 B, 32 B, ... (powers of 4 times 8) up to `max_bytes`, and `max_bytes` itself.
std::vector<int64_t> bench_sizes(int64_t max_bytes);
// `bytes` rounded down to what `op` on n devices of f32 can move (whole chunks of floats); 0 when
// nothing fits.
int64_t bench_bytes(std::string_view op, int64_t n, int64_t bytes);
// Back-to-back calls per batch and batches for a size: enough calls to time small messages well,
// few batches where each call takes long.
// "8,1K,64M": sizes in bytes, with K and M for KiB and MiB; an error names `what` and the entry.
std::vector<int64_t> parse_sizes(std::string_view text, std::string_view what);
int bench_calls(int64_t bytes);
int bench_batches(int64_t bytes);
double median(std::vector<double> v);

// Buffers for a device's benchmark: two of `bytes`, touched once (huge pages advised), f32 data.
class BenchBuffers {
 public:
  explicit BenchBuffers(size_t bytes);
  ~BenchBuffers();
  BenchBuffers(const BenchBuffers&) = delete;
  BenchBuffers& operator=(const BenchBuffers&) = delete;
  std::span<std::byte> in(size_t n) const { return {in_, n}; }
  std::span<std::byte> out(size_t n) const { return {out_, n}; }

 private:
  size_t bytes_;
  std::byte *in_, *out_;
};

// Run on every device of `group` at once (one thread or rank each): times every op of bench_ops()
// at every size through `comm` and returns the records (the same on every device).
std::vector<BenchRecord> bench_communicator(Communicator& comm, const Group& group, const std::vector<int64_t>& sizes,
                                            const std::string& backend);

// n host devices (threads of this process) running bench_communicator.
std::vector<BenchRecord> bench_host(int64_t n, const std::vector<int64_t>& sizes);

// One thread's memcpy of each size: the physical bound of a host collective.
std::vector<BenchRecord> bench_memcpy(const std::vector<int64_t>& sizes);

// `threads` threads each copying `bytes` between buffers of their own, at once: the machine's
// memory bandwidth, which bounds a large host collective (a 64 MiB all_reduce on n devices must
// read n inputs and write n outputs). The record has devices = threads, bytes = threads x bytes.
BenchRecord bench_memcpy_threads(int64_t bytes, int64_t threads);

}  // namespace tessera::comm
