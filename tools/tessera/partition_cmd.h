// `tessera partition FILE` and `tessera run FILE`: a StableHLO module (for example one exported
// from JAX, with sdy shardings) partitioned by Tessera, printed with its report, or run on host
// devices or MPI ranks with inputs and outputs as .npy files.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::tools {

struct PartitionCommand {
  std::string file;
  std::string function;  // empty: @main, else the first public function
  std::string mesh;      // "data=4,model=2": the axes of the module's mesh (added as @mesh if none)
  bool memory = false;   // also print what each device holds at the peak (train_memory.h's table)
  bool show = false;     // also draw each argument's and result's layout as a text grid
  std::string show_svg;  // non-empty: write those pictures as SVG files into this folder
  // Also list each collective with the operand or result and the dimension that forced it, and
  // warn of every gather of a value to more than its piece where a cheaper way is known
  // (spmd::Report::explain and warnings).
  bool explain = false;
  bool strict = false;  // those warnings are errors: a UserError naming each op and place
};

// Prints the local program, then the report. Returns the exit status.
int partition_command(const PartitionCommand& c, std::ostream& out);

struct RunCommand {
  std::string file;
  std::string function;
  std::string mesh;
  // host: the devices (0: as many as the module's mesh has, as the partitioner counts them);
  // mpi: devices per rank (0: 1)
  int64_t devices = 0;
  std::string backend = "host";     // "host" or "mpi" (under mpirun: every rank runs, rank 0 writes and prints)
  // "argN=path.npy" or "N=path.npy"; path.safetensors (one array) or path.safetensors:NAME
  std::vector<std::string> inputs;
  std::string output_dir = ".";
  std::string output_format = "npy";  // npy: result<i>.npy; safetensors: results.safetensors (result<i>)
  double timeout_s = 60;  // how long a collective waits for its peers
  int64_t max_while_iterations = -1;  // a while loop that would run its body more often is refused; -1: no limit
  std::string trace;      // non-empty: write the run's trace-event JSON here (trace_out.h)
  std::string trace_svg;  // non-empty: draw its timeline here
};

// Runs on `devices` host devices (or over MPI ranks) and writes result i to output_dir/result<i>.npy
// (types NumPy lacks, such as bf16, in the ml_dtypes convention of interp/npy.h), or all of them
// to output_dir/results.safetensors.
int run_command(const RunCommand& c, std::ostream& out);

}  // namespace tessera::tools
