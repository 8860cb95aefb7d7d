// PyTorch's compute-only schedule CSV (schedule.h): cells read into compute actions, the
// transfers inserted, the result validated with every action named by its row and column.
#include "mpmd/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "support/durable_file.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::mpmd {

using support::fail;

namespace {

// Bounds the tables built while reading (as parse_csv's kMaxCount); no real pipeline comes near.
constexpr int64_t kMaxIndex = 1 << 16;

// "[stage][F|I|B|W][microbatch]": the action, or a UserError naming the cell.
Action parse_cell(std::string_view cell, const std::string& where) {
  size_t i = 0;
  while (i < cell.size() && cell[i] >= '0' && cell[i] <= '9') ++i;
  std::string_view stage = cell.substr(0, i), rest = cell.substr(i);
  size_t j = 0;
  while (j < rest.size() && !(rest[j] >= '0' && rest[j] <= '9')) ++j;
  std::string_view type = rest.substr(0, j), microbatch = rest.substr(j);
  for (std::string_view comm : {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD"})
    if (type == comm)
      fail("{}: '{}' is PyTorch's {} action; this form (compute_only) holds F, I, B and W only (the sends and "
           "receives are inserted)", where, cell, comm);
  std::optional<int64_t> s = support::parse_int(stage), m = support::parse_int(microbatch);
  Action a;
  if (type == "F") a.kind = ActionKind::kForward;
  else if (type == "B") a.kind = ActionKind::kBackward;
  else if (type == "I") a.kind = ActionKind::kBackwardInput;
  else if (type == "W") a.kind = ActionKind::kBackwardWeight;
  if (!s || !m || (type != "F" && type != "B" && type != "I" && type != "W"))
    fail("{}: '{}' is not an action [stage][F|I|B|W][microbatch], e.g. 2F0", where, cell);
  if (*s > kMaxIndex || *m > kMaxIndex)
    fail("{}: '{}': an index above {} is more than this reader accepts", where, cell, kMaxIndex);
  a.virtual_stage = *s;
  a.microbatch = *m;
  return a;
}

}  // namespace

Schedule parse_torch_csv(std::string_view text, std::string_view source) {
  Schedule s;
  s.name = std::string(source);
  std::vector<std::vector<std::pair<int64_t, std::string_view>>> cells;  // per row, per action: column, text
  int64_t virtual_stages = 0;
  size_t pos = 0;
  while (pos < text.size()) {  // a final newline ends the last row; it starts none
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    const int64_t row = static_cast<int64_t>(s.actions.size()) + 1;
    if (row > kMaxIndex) fail("{}: more than {} rows", source, kMaxIndex);
    s.actions.emplace_back();
    cells.emplace_back();
    int64_t column = 0;
    for (std::string_view cell : support::split(line, ',')) {
      ++column;
      if (cell.empty()) continue;
      Action a = parse_cell(cell, fmt::format("{} row {} column {}", source, row, column));
      virtual_stages = std::max(virtual_stages, a.virtual_stage + 1);
      s.microbatches = std::max(s.microbatches, a.microbatch + 1);
      s.actions.back().push_back(a);
      cells.back().emplace_back(column, cell);
    }
  }
  s.stages = static_cast<int64_t>(s.actions.size());
  if (s.stages == 0) fail("{}: no rows (expected one row of actions per stage)", source);
  if (virtual_stages % s.stages != 0)
    fail("{}: its {} virtual stages (0-{}) do not split over its {} rows: stage v runs on row v mod {} + 1, so the "
         "virtual stages must be a multiple of the rows", source, virtual_stages, virtual_stages - 1, s.stages, s.stages);
  s.virtual_per_stage = virtual_stages / s.stages;
  // A compute action on the wrong row is the validator's to name; the transfers inserted for it
  // would name a stage that is not its own, so they are inserted only when every one is in place.
  for (int64_t st = 0; st < s.stages; ++st)
    for (size_t k = 0; k < s.actions[static_cast<size_t>(st)].size(); ++k) {
      const Action& a = s.actions[static_cast<size_t>(st)][k];
      if (s.stage_of(a.virtual_stage) != st)
        fail("{} row {} column {}: '{}' is virtual stage {}, which runs on row {} (stage v on row v mod {} + 1)",
             source, st + 1, cells[static_cast<size_t>(st)][k].first, cells[static_cast<size_t>(st)][k].second,
             a.virtual_stage, s.stage_of(a.virtual_stage) + 1, s.stages);
    }
  insert_transfers(s);
  // Each action of the lowered lists: its cell, or for an inserted transfer the cell it serves
  // (a receive is inserted right before its reader, a send right after its producer).
  std::vector<std::vector<std::string>> place(s.actions.size());
  for (size_t st = 0; st < s.actions.size(); ++st) {
    size_t k = 0;  // the next compute action of the row
    for (const Action& a : s.actions[st]) {
      if (a.is_compute()) {
        place[st].push_back(fmt::format("{} row {} column {}", source, st + 1, cells[st][k++].first));
      } else if (a.kind == ActionKind::kRecv) {
        place[st].push_back(fmt::format("{} row {} (inserted before column {})", source, st + 1, cells[st][k].first));
      } else {
        place[st].push_back(fmt::format("{} row {} (inserted after column {})", source, st + 1, cells[st][k - 1].first));
      }
    }
  }
  validate(s, [&](int64_t stage, int64_t step) { return place[static_cast<size_t>(stage)][static_cast<size_t>(step)]; });
  return s;
}

Schedule load_torch_csv(const std::string& path) { return parse_torch_csv(support::read_file_bytes(path), path); }

}  // namespace tessera::mpmd
