// The main of the GoogleTest binary that runs under mpirun: every rank runs every test. Rank 0
// prints GoogleTest's report; the other ranks print only their failures, prefixed with their
// rank, so a failure anywhere is seen, and it fails the run (mpirun exits non-zero when any rank
// does). MPI starts before the first test, so every rank is up before any test waits on another.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "comm/mpi_process.h"
#include "comm/mpi/mpi_test_env.h"

namespace {

int64_t g_local_devices = 1;

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      fmt::print(stderr, "[rank {}] {}:{}: Failure\n{}\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      fmt::print(stderr, "[rank {}] FAILED {}.{}\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

}  // namespace

namespace tessera::testing {
int64_t mpi_local_devices() { return g_local_devices; }
}  // namespace tessera::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with("--local-devices=")) g_local_devices = std::stoll(std::string(arg.substr(16)));
  }
  int rank = tessera::comm::MpiProcess::get().rank();
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  return RUN_ALL_TESTS();
}
