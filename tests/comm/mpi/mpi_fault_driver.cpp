// The fault test's program (run by mpi_fault_test.py under mpirun): every rank runs the worked
// example once on Session::mpi(1), then again; before the second run, rank 1 fails in the way the
// first argument names, while the others are already in the program's all_reduce:
//   throw   an exception leaves main (std::terminate, abort)
//   exit    std::exit(3)
//   kill    SIGKILL
//   device  its device throws inside the program (run_on_ranks reports it to the other ranks)
// Those four meet rank 1's fault in the handshake that starts a group's first collective of a run
// (Session makes a world per run). Two more fail while the others are already inside MPI's
// collective of a group that has met before, in one world, where the rank aborts the job:
//   inflight-exit  std::exit(3)
//   inflight-kill  SIGKILL
// The others must exit non-zero, each naming rank 1 and the collective. The second argument is a
// marker only, by which the test finds any process left behind.
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/worked_example.h"
#include "comm/mpi_communicator.h"
#include "runtime/session.h"
#include "support/error.h"

namespace {

using namespace tessera;

bool g_fail_here = false;
bool failing_kernel(const ir::Op&, std::span<const ir::Literal* const>, std::vector<ir::Literal>&) {
  if (g_fail_here) throw support::UserError("injected fault");
  return false;
}

std::vector<ir::Literal> inputs() {
  std::vector<double> x(32), w(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01 * double(i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1 - 0.02 * double(i);
  return {ir::Literal::from_doubles(ir::f32({8, 4}), x), ir::Literal::from_doubles(ir::f32({4, 3}), w)};
}

// One world, two all_reduces of 1 MiB on every device: rank 1 fails before the second.
int inflight(const std::string& mode) {
  comm::MpiWorld world(1, std::chrono::seconds(20));
  comm::MpiCommunicator c(world, world.rank());
  comm::Group all;
  for (int64_t d = 0; d < world.num_devices(); ++d) all.push_back(d);
  std::vector<float> in(1 << 18, 1.0f), out(in.size());
  auto step = [&] {
    c.all_reduce("stablehlo.all_reduce", all, ir::ElementType::f32, comm::ReduceOp::Sum,
                 std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
  };
  step();
  if (world.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (mode == "inflight-exit") std::exit(3);
    std::raise(SIGKILL);
  }
  step();
  fmt::print("rank {}: the second all_reduce ended without a fault\n", world.rank());
  return 0;
}

int run(const std::string& mode) {
  if (mode.starts_with("inflight")) return inflight(mode);
  ir::Module m("sharded_loss");
  testing::build_sharded_loss(m);
  runtime::Session s = runtime::Session::mpi(1, {std::chrono::seconds(20)});
  runtime::CompiledProgram p = s.compile(m, "sharded_loss");
  s.run_sharded(p, inputs());  // every rank is up and past compiling
  if (s.rank() == 1) {
    // Late enough that the others wait in the all_reduce.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (mode == "throw") throw std::runtime_error("injected fault: rank 1 throws before the all_reduce");
    if (mode == "exit") std::exit(3);
    if (mode == "kill") std::raise(SIGKILL);
    if (mode == "device") g_fail_here = true;
  }
  if (mode == "device") {
    // As Session::run_per_device does, with the failing kernel hook.
    runtime::ShardedProgram sp = s.sharded_program(p);
    std::vector<std::vector<ir::Literal>> per(4);
    std::vector<ir::Literal> in = inputs();
    for (size_t i = 0; i < in.size(); ++i)
      for (size_t d = 0; d < 4; ++d) per[d].push_back((*sp.stage(i, in[i]).pieces)[d]);
    comm::MpiWorld world(1, std::chrono::seconds(20));
    interp::Options base;
    base.accelerate = failing_kernel;
    comm::run_on_ranks(world, *p.module, p.info.function, per, base);
  } else {
    s.run_sharded(p, inputs());
  }
  fmt::print("rank {}: the second run ended without a fault\n", s.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: mpi_fault_driver throw|exit|kill|device|inflight-exit|inflight-kill [marker]\n");
    return 2;
  }
  std::string mode = argv[1];
  if (mode != "throw" && mode != "exit" && mode != "kill" && mode != "device" && mode != "inflight-exit" &&
      mode != "inflight-kill") {
    fmt::print(stderr, "mpi_fault_driver: unknown mode '{}'\n", mode);
    return 2;
  }
  try {
    return run(mode);
  } catch (const support::UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
