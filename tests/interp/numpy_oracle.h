// NumPy as a test oracle: Python expressions over input arrays, evaluated by the Debian
// python3-numpy that ctest names in $PYTHON (default /usr/bin/python3).
//
// Expressions are queued and run together in one Python process (starting Python with NumPy takes
// about 0.1 s), inputs and results travel as .npy files in a fresh temporary folder. In an
// expression the inputs are a0, a1, ... and NumPy is np; its value is saved with np.save, so it
// must have the dtype the test expects (cast with .astype when NumPy would promote).
#pragma once

#include <string>
#include <vector>

#include "ir/literal.h"

namespace tessera::interp::testing {

class NumPy {
 public:
  // Queues `expr` over `inputs`; returns its slot in run()'s results.
  size_t add(std::string expr, std::vector<ir::Literal> inputs);
  size_t size() const { return jobs_.size(); }
  // Evaluates every queued expression; throws std::runtime_error with Python's message when one
  // fails. Clears the queue.
  std::vector<ir::Literal> run();

 private:
  struct Job {
    std::string expr;
    std::vector<ir::Literal> inputs;
  };
  std::vector<Job> jobs_;
};

// The NumPy dtype of an element type, as Python text ("np.float32"); NumPy must have it.
std::string numpy_dtype(ir::ElementType e);

// One expression, one Python process.
ir::Literal numpy(std::string expr, std::vector<ir::Literal> inputs);

}  // namespace tessera::interp::testing
