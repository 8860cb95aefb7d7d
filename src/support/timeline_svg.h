// The one SVG timeline writer: a row per worker (a pipeline stage, a traced device thread), time
// across, a box per span of work coloured by the caller. Pipeline schedules (simulated or measured,
// schedule::timeline_svg) and run traces (`--trace-svg`) are both drawn by it. Plain text output: the
// picture must open in any browser and needs no library.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tessera::support {

struct TimelineBox {
  double start = 0, end = 0;  // in the timeline's unit, from its origin
  std::string fill;           // "#rrggbb"
  std::string tooltip;        // its <title>, shown on hover
  std::string label;          // drawn inside the box when it fits
  std::string ink = "#ffffff";  // the label's colour
};

struct TimelineRow {
  std::string name;
  // A box inside another (an op in a pipeline action) is drawn in a lane below the one holding it.
  std::vector<TimelineBox> boxes;
};

struct Timeline {
  std::string title;
  std::vector<std::pair<std::string, std::string>> legend;  // (text, colour), on one line under the title
  std::vector<TimelineRow> rows;
  double span = 0;         // the time drawn, from 0 (0: up to the latest end)
  std::string unit;        // the axis's caption ("time", "ms")
  double px_per_unit = 0;  // the horizontal scale (0: the span fills 960 pixels)
};

// The document: whole-pixel size, the title and legend, each row named on the left, the boxes, and
// an axis with ticks at 1, 2 or 5 times a power of ten. Boxes of one fill that touch and of which
// one is under a pixel wide are drawn as one (a step of thousands of ops), titled by the first.
std::string timeline_svg(const Timeline& timeline);

}  // namespace tessera::support
