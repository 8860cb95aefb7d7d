// `tessera bench collectives` (see bench_cmd.h). The host devices are timed in this process; the
// MPI figures come from tessera_mpi_collectives_bench, started here under
// `mpirun -np N --allow-run-as-root --oversubscribe` (more ranks than cores is expected on these
// machines; N = devices / devices per rank), whose rank 0 prints one "record ..." line per figure.
// With --backend mpi the output ends with the acceptance figure of issue #15: the all_reduce's
// bus bandwidth at the largest size over OpenMPI's MPI_Allreduce on the same ranks.
#include "tools/tessera/bench_cmd.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "comm/collective_bench.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::tools {
namespace {

using comm::BenchRecord;

std::string this_executable_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// Runs the MPI half under mpirun and reads its records.
std::vector<BenchRecord> run_mpi_half(const BenchCommand& c, const std::vector<int64_t>& sizes) {
  std::string bin = c.mpi_bench.empty() ? this_executable_dir() + "/tessera_mpi_collectives_bench" : c.mpi_bench;
  if (!std::filesystem::exists(bin))
    support::fail("bench collectives: the MPI half {} does not exist (built with the MPI backend; give --mpi-bench, "
                  "or --no-openmpi to time the host devices only)", bin);
  std::string cmd = fmt::format("{} -np {} --allow-run-as-root --oversubscribe {} --sizes {}{}", shell_quote(c.mpirun),
                                c.devices / c.devices_per_rank, shell_quote(bin), support::join(sizes, ","),
                                c.backend == "mpi" ? fmt::format(" --tessera --local-devices {}", c.devices_per_rank)
                                                   : std::string());
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) support::fail("bench collectives: cannot start `{}`", cmd);
  std::string text;
  char buf[4096];
  while (size_t got = fread(buf, 1, sizeof buf, pipe)) text.append(buf, got);
  int status = pclose(pipe);
  if (status != 0)
    support::fail("bench collectives: `{}` failed (status {}); its output:\n{}", cmd, status, text);
  std::vector<BenchRecord> records;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string tag, op, backend;
    int64_t devices = 0, bytes = 0;
    double us = 0;
    if (!(in >> tag) || tag != "record") continue;  // mpirun's own chatter
    if (!(in >> op >> backend >> devices >> bytes >> us))
      support::fail("bench collectives: cannot read the line '{}' of `{}`", line, cmd);
    records.push_back(comm::bench_record(op, backend, devices, bytes, us));
  }
  if (records.empty()) support::fail("bench collectives: `{}` printed no records; its output:\n{}", cmd, text);
  return records;
}

std::string human_bytes(int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// One table per op: a row per size, for each backend its median and bus bandwidth, and the host
// (or mpi) backend's bus bandwidth over OpenMPI's.
void print_tables(const std::vector<BenchRecord>& records, const std::string& mine, std::ostream& out) {
  std::map<std::pair<std::string, std::string>, std::map<int64_t, const BenchRecord*>> by;  // (op, backend)
  std::vector<std::string> ops;
  for (const BenchRecord& r : records) {
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
    by[{r.op, r.backend}][r.bytes] = &r;
  }
  for (const std::string& op : ops) {
    std::vector<std::string> backends;
    for (const char* b : {"host", "mpi", "openmpi", "memcpy"})
      if (by.count({op, b})) backends.push_back(b);
    std::string head = fmt::format("{:<18} {:>9}", op, "bytes");
    for (const std::string& b : backends) head += fmt::format(" | {:>10} {:>11} {:>9}", b + " us", "algbw GB/s", "busbw");
    bool ratio = by.count({op, mine}) && by.count({op, "openmpi"});
    if (ratio) head += fmt::format(" | {:>11}", mine + "/openmpi");
    out << head << "\n";
    std::set<int64_t> sizes;
    for (const std::string& b : backends)
      for (const auto& [bytes, r] : by[{op, b}]) sizes.insert(bytes);
    for (int64_t bytes : sizes) {
      std::string row = fmt::format("{:<18} {:>9}", "", human_bytes(bytes));
      for (const std::string& b : backends) {
        auto it = by[{op, b}].find(bytes);
        if (it == by[{op, b}].end()) {
          row += fmt::format(" | {:>10} {:>11} {:>9}", "-", "-", "-");
          continue;
        }
        row += fmt::format(" | {:>10.2f} {:>11.3f} {:>9.3f}", it->second->median_us, it->second->algbw_gbs,
                           it->second->busbw_gbs);
      }
      if (ratio) {
        auto m = by[{op, mine}].find(bytes), o = by[{op, "openmpi"}].find(bytes);
        if (m != by[{op, mine}].end() && o != by[{op, "openmpi"}].end() && o->second->busbw_gbs > 0)
          row += fmt::format(" | {:>10.1f}x", m->second->busbw_gbs / o->second->busbw_gbs);
      }
      out << row << "\n";
    }
    out << "\n";
  }
}

}  // namespace

int bench_command(const BenchCommand& c, std::ostream& out) {
  if (c.what != "collectives") support::fail("bench: unknown benchmark '{}' (there is: collectives)", c.what);
  if (c.devices < 1) support::fail("bench collectives: --devices {}; need at least 1", c.devices);
  if (c.backend != "host" && c.backend != "mpi")
    support::fail("bench collectives: --backend {}; expected host or mpi", c.backend);
  if (c.backend == "mpi" && !c.openmpi)
    support::fail("bench collectives: --backend mpi runs under mpirun; it cannot go with --no-openmpi");
  if (c.devices_per_rank < 1 || c.devices % c.devices_per_rank != 0)
    support::fail("bench collectives: --devices-per-rank {} does not divide --devices {}", c.devices_per_rank,
                  c.devices);
  if (c.devices_per_rank != 1 && c.backend != "mpi")
    support::fail("bench collectives: --devices-per-rank {} needs --backend mpi", c.devices_per_rank);
  std::vector<int64_t> sizes = c.sizes.empty() ? comm::bench_sizes(64 << 20) : comm::parse_sizes(c.sizes, "--sizes");

  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  out << fmt::format("tessera bench collectives: {} devices ({} backend{}), {} hardware threads on {}\n", c.devices,
                     c.backend,
                     c.backend == "mpi" ? fmt::format(", {} ranks x {}", c.devices / c.devices_per_rank,
                                                      c.devices_per_rank)
                                        : std::string(),
                     std::thread::hardware_concurrency(), host);
  std::vector<BenchRecord> records = comm::bench_memcpy(sizes);
  if (c.backend == "host")
    for (BenchRecord& r : comm::bench_host(c.devices, sizes)) records.push_back(std::move(r));
  if (c.openmpi)
    for (BenchRecord& r : run_mpi_half(c, sizes)) records.push_back(std::move(r));

  // The memcpy line goes with every op's table as the physical bound.
  std::vector<BenchRecord> shown;
  for (const BenchRecord& r : records)
    if (r.backend != "memcpy") shown.push_back(r);
  for (const BenchRecord& r : records)
    if (r.backend == "memcpy") shown.push_back(r);
  print_tables(shown, c.backend, out);

  // The memory bound of the largest all_reduce: it reads n inputs and writes n outputs, 2·n·S bytes
  // of memory traffic per call at the least; a memcpy moves 2 bytes per byte copied.
  int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  BenchRecord copy = comm::bench_memcpy_threads(sizes.back(), threads);
  records.push_back(copy);
  for (const BenchRecord& r : records)
    if (r.op == "all_reduce" && r.backend == c.backend && r.bytes == sizes.back() && r.median_us > 0)
      out << fmt::format(
          "memory traffic at {}: all_reduce {:.1f} GB/s (2 x {} x {} bytes per call); memcpy on {} "
          "threads {:.1f} GB/s (2 bytes per byte copied)\n\n",
          human_bytes(r.bytes), 2.0 * static_cast<double>(c.devices * r.bytes) / (r.median_us * 1e3),
          c.devices, r.bytes, threads, 2 * copy.algbw_gbs);

  // The acceptance figure of issue #15: Tessera's MPI all_reduce against OpenMPI's MPI_Allreduce
  // on the same ranks, by bus bandwidth (nccl-tests' factor for each one's device count).
  if (c.backend == "mpi") {
    const BenchRecord *mine = nullptr, *theirs = nullptr;
    for (const BenchRecord& r : records) {
      if (r.op != "all_reduce" || r.bytes != comm::bench_bytes("all_reduce", r.devices, sizes.back())) continue;
      if (r.backend == "mpi") mine = &r;
      if (r.backend == "openmpi") theirs = &r;
    }
    if (mine && theirs && theirs->busbw_gbs > 0)
      out << fmt::format("all_reduce at {}: Tessera over MPI {:.3f} GB/s bus bandwidth ({} devices) = {:.2f}x "
                         "OpenMPI's MPI_Allreduce {:.3f} GB/s ({} ranks)\n\n",
                         human_bytes(mine->bytes), mine->busbw_gbs, mine->devices, mine->busbw_gbs / theirs->busbw_gbs,
                         theirs->busbw_gbs, theirs->devices);
  }

  if (!c.json.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const BenchRecord& r : records)
      list.push_back({{"op", r.op}, {"backend", r.backend}, {"devices", r.devices}, {"bytes", r.bytes},
                      {"median_us", r.median_us}, {"algbw_gbs", r.algbw_gbs}, {"busbw_gbs", r.busbw_gbs}});
    std::ofstream f(c.json);
    if (!f) support::fail("bench collectives: cannot write --json {}", c.json);
    f << list.dump(1) << "\n";
    out << fmt::format("wrote {} records to {}\n", records.size(), c.json);
  }
  return 0;
}

}  // namespace tessera::tools
