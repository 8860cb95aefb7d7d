// A user's own pipeline schedule in PyTorch's CSV form: what torch.distributed.pipelining's
// _PipelineScheduleRuntime._load_csv(filename, format="compute_only") reads and _dump_csv writes.
//
// One row per rank (here: row r is stage r), one column per time step, each cell one compute
// action `[stage][type][microbatch]` — `1F0`, `0I3`, `2W1`, `0B2` — where the stage is the
// virtual stage (stage v runs on row v mod P, as Tessera's circular assignment and PyTorch's
// interleaved schedules place them), F a forward, B a whole backward, I the input-gradient half of
// a split backward and W its weight-gradient half; an empty cell is an idle step. The file holds
// no sends or receives: they are inserted as the built-in schedules insert them
// (generate.h's insert_transfers: a receive right before the action that needs the value, a send
// right after the one that produced it). The stage count is the number of rows, the virtual
// stages and microbatches are the largest indices + 1.
#pragma once

#include <string>
#include <string_view>

#include "mpmd/schedule.h"

namespace tessera::mpmd {

// Parses, inserts the transfers and validates (validate.h). UserErrors name `source`, the row and
// the column (both from 1) of the cell at fault: a cell that is not an action (PyTorch's
// communication actions SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD and RESHARD included: this form
// holds compute actions only), and every defect the validator finds (an inserted send or receive
// names the cell it was inserted for; a missing action names its stage, which is row stage + 1).
Schedule parse_torch_csv(std::string_view text, std::string_view source = "<csv>");
Schedule load_torch_csv(const std::string& path);

}  // namespace tessera::mpmd
