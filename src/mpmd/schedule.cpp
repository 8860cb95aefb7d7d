// Names of actions and the CSV form of a schedule (see schedule.h for the format).
#include "mpmd/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>

#include "support/durable_file.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::mpmd {

using support::fail;
using support::split;
using support::trim;

namespace {

constexpr int64_t kMaxCount = 1'000'000;
constexpr std::string_view kMagic = "# tessera-schedule";
constexpr std::string_view kHeader = "stage,step,kind,microbatch,virtual_stage,payload,peer";
constexpr const char* kColumns[] = {"stage",         "step",    "kind", "microbatch",
                                    "virtual_stage", "payload", "peer"};

// A non-negative integer, or a UserError naming the place and what was expected.
int64_t parse_count(std::string_view text, std::string_view where, std::string_view what) {
  const std::optional<int64_t> value = support::parse_int(text);
  if (!value || *value < 0) fail("{}: {} '{}' is not a non-negative integer", where, what, text);
  return *value;
}

ActionKind parse_kind(std::string_view text, std::string_view where) {
  for (ActionKind k : {ActionKind::kForward, ActionKind::kBackward, ActionKind::kBackwardInput,
                       ActionKind::kBackwardWeight, ActionKind::kSend, ActionKind::kRecv})
    if (text == kind_name(k)) return k;
  fail("{}: column 'kind': unknown action '{}' (expected F, B, BI, W, SEND or RECV)", where, text);
}

}  // namespace

std::string_view kind_name(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward: return "F";
    case ActionKind::kBackward: return "B";
    case ActionKind::kBackwardInput: return "BI";
    case ActionKind::kBackwardWeight: return "W";
    case ActionKind::kSend: return "SEND";
    case ActionKind::kRecv: return "RECV";
  }
  return "?";
}

std::string_view payload_name(Payload payload) {
  switch (payload) {
    case Payload::kNone: return "";
    case Payload::kActivation: return "act";
    case Payload::kGradient: return "grad";
  }
  return "?";
}

std::string describe(const Action& a) {
  if (a.is_compute()) return fmt::format("{}(mb {}, vs {})", kind_name(a.kind), a.microbatch, a.virtual_stage);
  return fmt::format("{} {}(mb {}, vs {}) {} stage {}", kind_name(a.kind), payload_name(a.payload),
                     a.microbatch, a.virtual_stage, a.kind == ActionKind::kSend ? "to" : "from", a.peer);
}

std::string describe_at(int64_t stage, int64_t step, const Action& a) {
  return fmt::format("stage {} step {} {}", stage, step, describe(a));
}

void print_csv(const Schedule& s, std::ostream& out) {
  // The name is one token of the first line; a space in it could not be read back.
  if (s.name.empty() || s.name.find_first_of(" \t\r\n,") != std::string::npos)
    fail("schedule name '{}' cannot be written to CSV: it must be one word without commas", s.name);
  out << fmt::format("{} name={} stages={} microbatches={} virtual={}\n", kMagic, s.name, s.stages,
                     s.microbatches, s.virtual_per_stage);
  out << kHeader << "\n";
  for (size_t stage = 0; stage < s.actions.size(); ++stage)
    for (size_t step = 0; step < s.actions[stage].size(); ++step) {
      const Action& a = s.actions[stage][step];
      std::string peer = a.is_compute() ? "" : fmt::format("{}", a.peer);
      out << fmt::format("{},{},{},{},{},{},{}\n", stage, step, kind_name(a.kind), a.microbatch,
                         a.virtual_stage, payload_name(a.payload), peer);
    }
}

std::string print_csv(const Schedule& s) {
  std::ostringstream out;
  print_csv(s, out);
  return out.str();
}

Schedule parse_csv(std::string_view text, std::string_view source) {
  Schedule s;
  bool have_magic = false, have_header = false;
  // Per stage: step -> (action, line) so rows may come in any order.
  std::vector<std::map<int64_t, std::pair<Action, int>>> rows;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = trim(text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos));
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++line_no;
    std::string where = fmt::format("{}:{}", source, line_no);
    if (!have_magic) {
      if (line.empty()) continue;
      if (line.substr(0, kMagic.size()) != kMagic)
        fail("{}: expected the first line '{} name=N stages=P microbatches=M virtual=V'", where, kMagic);
      bool got[3] = {false, false, false};
      for (std::string_view item : split(line.substr(kMagic.size()), ' ')) {
        if (item.empty()) continue;
        size_t eq = item.find('=');
        if (eq == std::string_view::npos) fail("{}: '{}' is not key=value", where, item);
        std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
        if (key == "name") {
          if (value.empty()) fail("{}: the schedule name is empty", where);
          s.name = std::string(value);
        } else if (key == "stages" || key == "microbatches" || key == "virtual") {
          int64_t n = parse_count(value, where, key);
          if (n == 0) fail("{}: {} must be at least 1", where, key);
          // Bounds the per-stage tables built while reading; no real pipeline comes near.
          if (n > kMaxCount) fail("{}: {}={} is more than the {} this reader accepts", where, key, n, kMaxCount);
          int idx = key == "stages" ? 0 : key == "microbatches" ? 1 : 2;
          (idx == 0 ? s.stages : idx == 1 ? s.microbatches : s.virtual_per_stage) = n;
          got[idx] = true;
        } else {
          fail("{}: unknown key '{}' (expected name, stages, microbatches, virtual)", where, key);
        }
      }
      if (!got[0] || !got[1] || !got[2])
        fail("{}: the first line must give stages=, microbatches= and virtual=", where);
      rows.resize(static_cast<size_t>(s.stages));
      have_magic = true;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    if (!have_header) {
      if (line != kHeader) fail("{}: expected the header row '{}'", where, kHeader);
      have_header = true;
      continue;
    }
    std::vector<std::string_view> f = split(line, ',');
    if (f.size() != 7) fail("{}: expected 7 columns ({}), found {}", where, kHeader, f.size());
    auto count = [&](int col) {
      return parse_count(f[col], where, fmt::format("column '{}':", kColumns[col]));
    };
    int64_t stage = count(0), step = count(1);
    if (stage >= s.stages)
      fail("{}: column 'stage': {} is out of range (the schedule has {} stages)", where, stage, s.stages);
    Action a;
    a.kind = parse_kind(f[2], where);
    a.microbatch = count(3);
    a.virtual_stage = count(4);
    if (a.is_compute()) {
      if (!f[5].empty() || !f[6].empty())
        fail("{}: {} takes no payload or peer (columns 'payload' and 'peer' must be empty)", where, f[2]);
    } else {
      if (f[5] == "act") a.payload = Payload::kActivation;
      else if (f[5] == "grad") a.payload = Payload::kGradient;
      else fail("{}: column 'payload': '{}' is not act or grad", where, f[5]);
      a.peer = count(6);
    }
    auto [it, inserted] = rows[static_cast<size_t>(stage)].emplace(step, std::make_pair(a, line_no));
    if (!inserted)
      fail("{}: stage {} step {} is already given on line {}", where, stage, step, it->second.second);
  }
  if (!have_magic) fail("{}: empty schedule (expected the line '{} ...')", source, kMagic);
  if (!have_header) fail("{}: missing the header row '{}'", source, kHeader);
  s.actions.resize(rows.size());
  for (size_t stage = 0; stage < rows.size(); ++stage)
    for (auto& [step, entry] : rows[stage]) s.actions[stage].push_back(entry.first);
  return s;
}

Schedule load_csv(const std::string& path) { return parse_csv(support::read_file_bytes(path), path); }

}  // namespace tessera::mpmd
