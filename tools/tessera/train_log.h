// `tessera train`'s output over a run: the progress bar or lines (loss, learning rate, pre-clip
// gradient norm, tokens/s, ETA), the --losses file, and the summary line. Kept apart from
// train_cmd.cpp, which builds and runs the programs.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <cmath>

#include "support/error.h"
#include "tools/tessera/train_cmd.h"

namespace tessera::tools {

std::string duration(double seconds);  // "1m05s"

// The progress bar (or, without one, a line per tenth of the run) after step t; `extra` follows
// the loss on the line; with `mfu` >= 0, the model FLOPs utilization after tokens/s.
void progress(std::ostream& out, const TrainCommand& c, int64_t t, int64_t first_step, double loss,
              const std::string& extra, std::chrono::steady_clock::time_point start, double mfu = -1);

// The losses of a run: checked, written to --losses (rank 0), the progress line after each step
// and the summary line at the end; evaluation losses and notes (a save) on lines of their own.
// With `step_flops` and `peak` (FLOP/s) > 0 the lines show the model FLOPs utilization: the
// step's FLOPs times the steps done, over the wall time, over the peak.
class LossLog {
 public:
  LossLog(const TrainCommand& c, bool rank0, int64_t first_step, double step_flops = 0, double peak = 0)
      : c_(c), first_step_(first_step), step_flops_(step_flops), peak_(peak) {
    if (rank0 && !c.losses.empty()) {
      file_.open(c.losses);
      if (!file_) support::fail("--losses {}: cannot write the file", c.losses);
    }
    start_ = std::chrono::steady_clock::now();
  }
  // `extra`: more of the line after the loss ("  lr 3.00e-03  norm 1.234").
  void step(std::ostream& out, int64_t t, double loss, const std::string& extra = "") {
    if (!std::isfinite(loss)) support::fail("step {}: the loss is {}; lower --lr", t, loss);
    if (file_.is_open()) file_ << fmt::format("{} {:.9g} {:a}\n", t, loss, loss);  // f32 loss: both exact
    if (t == first_step_) first_ = loss;
    last_ = loss;
    recent_.push_back(loss);  // the last 10 losses: one batch's loss is noisy
    if (recent_.size() > 10) recent_.erase(recent_.begin());
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    mfu_ = step_flops_ > 0 && peak_ > 0 && seconds > 0 ? double(t - first_step_ + 1) * step_flops_ / seconds / peak_ : -1;
    progress(out, c_, t, first_step_, loss, extra, start_, mfu_);
    if (c_.on_step) c_.on_step(t, loss);
  }
  // The held-out loss after step t.
  void eval(std::ostream& out, int64_t t, double loss) {
    if (evals_.empty()) first_eval_ = loss;
    evals_.push_back(loss);
    note(out, fmt::format("step {}  eval loss {:.4f} (held out)", t, loss));
  }
  // A line of its own, also when the progress bar is drawn (it is redrawn after the next step).
  void note(std::ostream& out, const std::string& line) {
    out << (c_.progress_bar ? "\n" : "") << line << "\n" << std::flush;
  }
  void finish(std::ostream& out) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (c_.progress_bar) out << "\n";
    if (file_.is_open()) {
      file_.close();
      if (!file_) support::fail("--losses {}: writing the file failed", c_.losses);
    }
    double mean = 0;
    for (double l : recent_) mean += l / double(recent_.size());
    out << fmt::format("loss {:.4f} -> {:.4f} nats per byte (mean of the last {} steps {:.4f}) in {} ({:.0f} "
                       "tokens/s{})\n",
                       first_, last_, recent_.size(), mean, duration(elapsed),
                       double(c_.steps * c_.batch * c_.seq) / elapsed,
                       mfu_ >= 0 ? fmt::format(", MFU {:.1f} %", 100 * mfu_) : "");
    if (!evals_.empty())
      out << fmt::format("eval loss {:.4f} -> {:.4f} on held-out text ({} evaluations)\n", first_eval_, evals_.back(),
                         evals_.size());
  }

 private:
  const TrainCommand& c_;
  int64_t first_step_;
  double step_flops_, peak_, mfu_ = -1;
  std::ofstream file_;
  std::chrono::steady_clock::time_point start_;
  double first_ = 0, last_ = 0, first_eval_ = 0;
  std::vector<double> recent_, evals_;
};

}  // namespace tessera::tools
