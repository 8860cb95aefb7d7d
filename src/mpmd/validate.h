// The validator of schedules: a schedule that would compute the wrong thing, or hang, is refused
// with a UserError that names the offending action and its place ("stage 1 step 4 F(mb 2, vs 1)").
#pragma once

#include <functional>
#include <string>

#include "mpmd/schedule.h"

namespace tessera::mpmd {

// Checks, in this order, and reports the first failure:
//  1. sizes: stages, microbatches, virtual stages ≥ 1 and one action list per stage;
//  2. ranges: microbatch and virtual stage in range; a compute action on the stage that holds its
//     virtual stage; a SEND on the producer's stage to the consumer's stage, a RECV on the
//     consumer's stage from the producer's; no transfer to the stage itself or past either end;
//  3. duplicates: no action twice, and no backward given both whole (B) and split (BI, W);
//  4. completeness: every microbatch has F and B (or BI and W) on every virtual stage;
//  5. pairs: every SEND has exactly the RECV that matches it on its peer and vice versa;
//  6. order on each stage: a forward after its input's producer (the previous virtual stage's F on
//     the same stage, or the RECV of its activation), a backward after its own forward and after its
//     gradient's producer (or RECV), W after BI, a SEND after the action producing its value;
//  7. progress: executed in order with receives waiting for their sends, every stage finishes —
//     a receive that comes before its matching send can ever run (a cycle) is refused.
//
// `place`, when given, names where an action comes from in messages instead of "stage 1 step 4"
// (a file's row and column: torch_csv.h).
using PlaceName = std::function<std::string(int64_t stage, int64_t step)>;
void validate(const Schedule& s, const PlaceName& place = nullptr);

}  // namespace tessera::mpmd
