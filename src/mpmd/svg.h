// The timeline of a simulated (or measured) schedule as an SVG picture, written directly as text:
// one row per stage, one box per compute action (coloured by kind, labelled with its microbatch),
// and a time axis underneath.
#pragma once

#include <string>
#include <string_view>

#include "mpmd/schedule.h"
#include "mpmd/simulate.h"

namespace tessera::mpmd {

// The SVG document. It has one background <rect> and one <rect> per compute action of positive
// duration (zero-cost actions, e.g. W with w = 0, are not drawn); nothing else is a rect.
std::string timeline_svg(const Schedule& s, const Simulation& sim, std::string_view title);

}  // namespace tessera::mpmd
