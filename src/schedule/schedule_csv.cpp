// The schedule CSV, in PyTorch's pipelining form (schedule.h): written with its transfers
// (compute_comms), read in either form, cells read into actions, the transfers inserted when the
// file has none, the result validated with every action named by its row and column.
#include "schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "support/durable_file.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::schedule {

using support::fail;

namespace {

// Bounds the tables built while reading; no real pipeline comes near.
constexpr int64_t kMaxIndex = 1 << 16;

// PyTorch's action types. A cell's stage is the one that runs it; for a transfer that is the
// sender's (SEND) or the receiver's (RECV) virtual stage, while an Action names the value's producer:
// `producer` is its offset from the cell's stage.
struct Type {
  std::string_view name;
  ActionKind kind;
  Payload payload;
  int64_t producer;
};
constexpr Type kTypes[] = {
    {"F", ActionKind::kForward, Payload::kNone, 0},
    {"B", ActionKind::kBackward, Payload::kNone, 0},
    {"I", ActionKind::kBackwardInput, Payload::kNone, 0},
    {"W", ActionKind::kBackwardWeight, Payload::kNone, 0},
    {"SEND_F", ActionKind::kSend, Payload::kActivation, 0},
    {"RECV_F", ActionKind::kRecv, Payload::kActivation, -1},
    {"SEND_B", ActionKind::kSend, Payload::kGradient, 0},
    {"RECV_B", ActionKind::kRecv, Payload::kGradient, 1},
};

const Type& type_of(const Schedule& s, const Action& a) {
  for (const Type& t : kTypes)
    if (t.kind == a.kind && t.payload == a.payload) return t;
  fail("{} cannot be written to a schedule CSV", describe(s, a));
}

struct Cell {
  std::string_view text;
  int64_t column = 0;  // from 1
  const Type* type = nullptr;
  int64_t stage = 0, microbatch = 0;
};

// "[stage][type][microbatch]", or a UserError naming the cell.
Cell parse_cell(std::string_view text, int64_t column, const std::string& where) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  size_t j = i;
  while (j < text.size() && !(text[j] >= '0' && text[j] <= '9')) ++j;
  const std::string_view type = text.substr(i, j - i);
  for (std::string_view fsdp : {"UNSHARD", "RESHARD"})
    if (type == fsdp)
      fail("{}: '{}' is PyTorch's {} action (FSDP's); a schedule here holds F, I, B, W and the sends and receives",
           where, text, fsdp);
  Cell c{text, column};
  for (const Type& t : kTypes)
    if (type == t.name) c.type = &t;
  std::optional<int64_t> stage = support::parse_int(text.substr(0, i)), mb = support::parse_int(text.substr(j));
  if (!stage || !mb || !c.type)
    fail("{}: '{}' is not an action [stage][F|I|B|W|SEND_F|RECV_F|SEND_B|RECV_B][microbatch], e.g. 2F0", where, text);
  if (*stage > kMaxIndex || *mb > kMaxIndex)
    fail("{}: '{}': an index above {} is more than this reader accepts", where, text, kMaxIndex);
  c.stage = *stage;
  c.microbatch = *mb;
  return c;
}

}  // namespace

std::string print_csv(const Schedule& s) {
  std::string out;
  for (const std::vector<Action>& row : s.actions) {
    for (size_t i = 0; i < row.size(); ++i) {
      const Type& t = type_of(s, row[i]);
      out += fmt::format("{}{}{}{}", i == 0 ? "" : ",", row[i].virtual_stage - t.producer, t.name, row[i].microbatch);
    }
    out += "\n";
  }
  return out;
}

Schedule parse_csv(std::string_view text, std::string_view source) {
  std::vector<std::vector<Cell>> rows;
  auto at = [&](size_t row, int64_t column) { return fmt::format("{} row {} column {}", source, row + 1, column); };
  int64_t virtual_stages = 0, microbatches = 0;
  bool transfers = false;
  size_t pos = 0;
  while (pos < text.size()) {  // a final newline ends the last row; it starts none
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    if (static_cast<int64_t>(rows.size()) >= kMaxIndex) fail("{}: more than {} rows", source, kMaxIndex);
    std::vector<Cell>& row = rows.emplace_back();
    int64_t column = 0;
    for (std::string_view cell : support::split(line, ',')) {
      ++column;
      if (cell.empty()) continue;
      row.push_back(parse_cell(cell, column, at(rows.size() - 1, column)));
      virtual_stages = std::max(virtual_stages, row.back().stage + 1);
      microbatches = std::max(microbatches, row.back().microbatch + 1);
      transfers = transfers || row.back().type->payload != Payload::kNone;
    }
  }
  Schedule s;
  s.name = std::string(source);
  s.stages = static_cast<int64_t>(rows.size());
  s.microbatches = std::max<int64_t>(microbatches, 1);
  if (s.stages == 0) fail("{}: no rows (expected one row of actions per stage)", source);
  if (virtual_stages % s.stages != 0)
    fail("{}: its {} virtual stages (0-{}) do not split over its {} rows: stage v runs on row v mod {} + 1, so the "
         "virtual stages must be a multiple of the rows", source, virtual_stages, virtual_stages - 1, s.stages, s.stages);
  s.virtual_per_stage = std::max<int64_t>(virtual_stages / s.stages, 1);
  s.actions.resize(rows.size());
  for (size_t st = 0; st < rows.size(); ++st)
    for (const Cell& c : rows[st]) {
      // A compute action on the wrong row is named here: the transfers inserted for it would name a
      // stage that is not its own.
      const bool transfer = c.type->payload != Payload::kNone;
      if (!transfer && s.stage_of(c.stage) != static_cast<int64_t>(st))
        fail("{}: '{}' is virtual stage {}, which runs on row {} (stage v on row v mod {} + 1)", at(st, c.column),
             c.text, c.stage, s.stage_of(c.stage) + 1, s.stages);
      s.actions[st].push_back({c.type->kind, c.microbatch, c.stage + c.type->producer, c.type->payload});
    }
  if (!transfers) insert_transfers(s);
  // Each action's place: its cell, or for an inserted transfer the cell it serves (a receive is
  // inserted right before its reader, a send right after its producer).
  std::vector<std::vector<std::string>> place(s.actions.size());
  for (size_t st = 0; st < s.actions.size(); ++st) {
    size_t k = 0;  // the row's next cell
    for (const Action& a : s.actions[st]) {
      if (transfers || a.is_compute()) place[st].push_back(at(st, rows[st][k++].column));
      else if (a.kind == ActionKind::kRecv)
        place[st].push_back(fmt::format("{} row {} (inserted before column {})", source, st + 1, rows[st][k].column));
      else place[st].push_back(fmt::format("{} row {} (inserted after column {})", source, st + 1, rows[st][k - 1].column));
    }
  }
  validate(s, [&](int64_t stage, int64_t step) { return place[static_cast<size_t>(stage)][static_cast<size_t>(step)]; });
  return s;
}

Schedule load_csv(const std::string& path) { return parse_csv(support::read_file_bytes(path), path); }

}  // namespace tessera::schedule
