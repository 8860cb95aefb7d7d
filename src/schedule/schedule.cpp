// Names of actions and their descriptions in messages (schedule.h).
#include "schedule/schedule.h"

#include <fmt/format.h>

namespace tessera::schedule {

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

std::string describe(const Schedule& s, const Action& a) {
  if (a.is_compute()) return fmt::format("{}(mb {}, vs {})", kind_name(a.kind), a.microbatch, a.virtual_stage);
  return fmt::format("{} {}(mb {}, vs {}) {} stage {}", kind_name(a.kind), payload_name(a.payload),
                     a.microbatch, a.virtual_stage, a.kind == ActionKind::kSend ? "to" : "from", s.peer(a));
}

std::string describe_at(const Schedule& s, int64_t stage, int64_t step) {
  return fmt::format("stage {} step {} {}", stage, step,
                     describe(s, s.actions[static_cast<size_t>(stage)][static_cast<size_t>(step)]));
}

}  // namespace tessera::schedule
