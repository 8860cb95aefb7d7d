// `tessera train`'s progress output (train_log.h).
#include "tools/tessera/train_log.h"

#include <fmt/format.h>

namespace tessera::tools {

std::string duration(double seconds) {
  int s = static_cast<int>(seconds + 0.5);
  return s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}

// The progress bar (or, without one, a line per tenth of the run) after step t.
void progress(std::ostream& out, const TrainCommand& c, int64_t t, int64_t first_step, double loss,
              const std::string& extra, std::chrono::steady_clock::time_point start, double mfu) {
  int64_t done = t - first_step + 1, last_step = first_step + c.steps - 1;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double tps = double(done * c.batch * c.seq) / elapsed;
  double eta = elapsed / double(done) * double(c.steps - done);
  std::string rate = fmt::format("{:.0f} tok/s{}", tps, mfu >= 0 ? fmt::format("  MFU {:.1f} %", 100 * mfu) : "");
  if (c.progress_bar) {
    int width = 30, fill = static_cast<int>(width * done / c.steps);
    out << fmt::format("\r[{}{}] step {}/{}  loss {:.4f}{}  {}  ETA {}   ", std::string(size_t(fill), '#'),
                       std::string(size_t(width - fill), '.'), t, last_step, loss, extra, rate, duration(eta))
        << std::flush;
  } else if (done == 1 || done % std::max<int64_t>(1, c.steps / 10) == 0 || t == last_step) {
    // Flushed: a log file or pipe (nohup, tee, CI) shows each line as it happens.
    out << fmt::format("step {}/{}  loss {:.4f}{}  {}  ETA {}\n", t, last_step, loss, extra, rate, duration(eta))
        << std::flush;
  }
}

}  // namespace tessera::tools
