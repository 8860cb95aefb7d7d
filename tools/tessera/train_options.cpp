// `tessera train`'s optimizer options and checkpoint metadata (train_options.h).
#include "tools/tessera/train_options.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "ir/element_type.h"
#include "support/error.h"

namespace tessera::tools {

using support::fail;

nn::AdamW adamw_of(const TrainCommand& c) {
  if (!(c.weight_decay >= 0)) fail("--weight-decay {}: expected a number >= 0", c.weight_decay);
  nn::AdamW a;
  a.lr = c.lr;
  a.weight_decay = c.weight_decay;
  size_t start = 0;
  while (start <= c.no_decay.size() && !c.no_decay.empty()) {
    size_t comma = c.no_decay.find(',', start);
    std::string p = c.no_decay.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (p.empty()) fail("--no-decay {}: an empty pattern", c.no_decay);
    a.no_decay.push_back(p);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return a;
}

nn::LrSchedule schedule_of(const TrainCommand& c, int64_t last_step) {
  nn::LrSchedule s;
  s.kind = nn::parse_lr_schedule(c.lr_schedule);
  s.lr = c.lr;
  s.min_lr = c.min_lr;
  s.warmup = c.warmup;
  s.total = c.lr_steps > 0 ? c.lr_steps : last_step;
  if (c.warmup < 0) fail("--warmup {}: expected a number of steps >= 0", c.warmup);
  if (!(c.min_lr >= 0 && c.min_lr <= c.lr)) fail("--min-lr {}: expected a number from 0 to --lr {}", c.min_lr, c.lr);
  return s;
}

namespace {

// A whole number > 0 spelled exactly, or nullopt.
std::optional<int64_t> count_of(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int64_t n = std::stoll(text);
  return n > 0 ? std::optional<int64_t>(n) : std::nullopt;
}

// "ep", "ep=N", "dp,ep", "dp=D,ep=N" as (D or 0, N or 0); nullopt for any other plan.
std::optional<std::pair<int64_t, int64_t>> expert_plan_sizes(const std::string& plan) {
  auto size_of = [](const std::string& part, const std::string& axis) -> std::optional<int64_t> {
    if (part == axis) return 0;
    if (part.rfind(axis + "=", 0) != 0) return std::nullopt;
    std::optional<int64_t> n = count_of(part.substr(axis.size() + 1));
    if (!n) fail("--plan {}: expected a number of devices > 0 after '{}='", part, axis);
    return n;
  };
  size_t comma = plan.find(',');
  if (comma == std::string::npos) {
    std::optional<int64_t> ep = size_of(plan, "ep");
    if (!ep) return std::nullopt;
    return std::pair<int64_t, int64_t>{1, *ep};
  }
  std::optional<int64_t> dp = size_of(plan.substr(0, comma), "dp"), ep = size_of(plan.substr(comma + 1), "ep");
  if (!dp || !ep) return std::nullopt;
  return std::pair<int64_t, int64_t>{*dp, *ep};
}

}  // namespace

void apply_moe(const TrainCommand& c, nn::Config& config) {
  if (c.moe.empty()) return;
  size_t comma = c.moe.find(',');
  std::optional<int64_t> experts = count_of(c.moe.substr(0, comma));
  std::optional<int64_t> k = comma == std::string::npos ? std::optional<int64_t>(1) : count_of(c.moe.substr(comma + 1));
  if (!experts || !k) fail("--moe {}: expected E or E,k (E experts, top-k routing with k 1 or 2)", c.moe);
  if (*k > 2) fail("--moe {}: top-k routing with k = {}; expected 1 or 2", c.moe, *k);
  if (*k > *experts) fail("--moe {}: top-{} routing needs at least {} experts", c.moe, *k, *k);
  if (!(c.capacity_factor > 0) || !std::isfinite(c.capacity_factor))
    fail("--capacity-factor {}: expected a positive number", c.capacity_factor);
  if (!(c.aux_loss_coef >= 0) || !std::isfinite(c.aux_loss_coef))
    fail("--aux-loss-coef {}: expected a number >= 0", c.aux_loss_coef);
  config.experts = *experts;
  config.top_k = *k;
  config.capacity_factor = c.capacity_factor;
  config.aux_loss_coef = c.aux_loss_coef;
}

std::optional<int64_t> plan_devices(const std::string& plan) {
  std::optional<std::pair<int64_t, int64_t>> sizes = expert_plan_sizes(plan);
  if (!sizes || sizes->first == 0 || sizes->second == 0) return std::nullopt;
  return sizes->first * sizes->second;
}

std::optional<int64_t> expert_axis_size(const std::string& plan, int64_t devices) {
  std::optional<std::pair<int64_t, int64_t>> sizes = expert_plan_sizes(plan);
  if (!sizes) return std::nullopt;
  auto [dp, ep] = *sizes;
  if (dp == 0 && ep == 0) {  // dp,ep: 2 on the expert axis
    if (devices % 2 != 0) fail("--plan {} needs an even number of devices, not {}", plan, devices);
    return 2;
  }
  if (ep == 0) ep = devices / dp;
  if (dp == 0) dp = devices / ep;
  if (dp * ep != devices)
    fail("--plan {}: {} x {} devices, but the run has {} (--devices)", plan, dp, ep, devices);
  return ep;
}

std::map<std::string, std::string> run_metadata(const nn::Config& config, const nn::LrSchedule& s, int held_out_percent) {
  return {{"model.vocab", std::to_string(config.vocab)},
          {"model.d_model", std::to_string(config.d_model)},
          {"model.layers", std::to_string(config.layers)},
          {"model.heads", std::to_string(config.heads)},
          {"model.kv_heads", std::to_string(config.kv_heads)},
          {"model.ffn", std::to_string(config.ffn)},
          {"model.experts", std::to_string(config.experts)},
          {"model.top_k", std::to_string(config.top_k)},
          {"model.capacity_factor", fmt::format("{:.17g}", config.capacity_factor)},
          {"model.aux_loss_coef", fmt::format("{:.17g}", config.aux_loss_coef)},
          {"model.dtype", std::string(ir::spelling(config.dtype))},
          {"schedule.kind", nn::lr_schedule_name(s.kind)},
          {"schedule.lr", fmt::format("{:.17g}", s.lr)},
          {"schedule.min_lr", fmt::format("{:.17g}", s.min_lr)},
          {"schedule.warmup", std::to_string(s.warmup)},
          // A constant schedule never ends: its horizon is not part of it (a run may be extended).
          {"schedule.total", s.kind == nn::LrSchedule::Kind::kConstant ? "-" : std::to_string(s.total)},
          // The batches come from the corpus less its held-out tail: another split, other batches.
          {"data.held_out_percent", std::to_string(held_out_percent)}};
}

nn::Config config_of_metadata(const std::string& resume, const std::map<std::string, std::string>& meta) {
  auto field = [&](const std::string& key) -> const std::string& {
    auto it = meta.find(key);
    if (it == meta.end())
      fail("--resume {}: the checkpoint records no {} (it was saved by an older tessera, or not by `tessera train`)",
           resume, key);
    return it->second;
  };
  auto number = [&](const std::string& key) {
    const std::string& v = field(key);
    try {
      size_t used = 0;
      int64_t n = std::stoll(v, &used);
      if (used == v.size()) return n;
    } catch (const std::exception&) {
    }
    fail("--resume {}: the checkpoint's {} is '{}', not a whole number", resume, key, v);
  };
  nn::Config c;
  c.vocab = number("model.vocab");
  c.d_model = number("model.d_model");
  c.layers = number("model.layers");
  c.heads = number("model.heads");
  c.kv_heads = number("model.kv_heads");
  c.ffn = number("model.ffn");
  // MoE fields: absent from checkpoints of dense models saved before MoE existed.
  if (meta.count("model.experts") != 0) {
    c.experts = number("model.experts");
    c.top_k = number("model.top_k");
    for (auto [key, into] : {std::pair{"model.capacity_factor", &c.capacity_factor}, {"model.aux_loss_coef", &c.aux_loss_coef}}) {
      const std::string& v = field(key);
      char* end = nullptr;
      *into = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size()) fail("--resume {}: the checkpoint's {} is '{}', not a number", resume, key, v);
    }
  }
  std::optional<ir::ElementType> dtype = ir::parse_element_type(field("model.dtype"));
  if (!dtype || !ir::is_float(*dtype)) fail("--resume {}: the checkpoint's model.dtype '{}' is not a float type", resume, field("model.dtype"));
  c.dtype = *dtype;
  try {
    c.validate();
  } catch (const support::UserError& e) {
    fail("--resume {}: {}", resume, e.what());
  }
  return c;
}

std::string check_resume(const std::string& resume, const std::map<std::string, std::string>& saved,
                         const nn::Config& config, const nn::LrSchedule& schedule, int held_out_percent) {
  // The option that sets each field, for the message.
  static const std::map<std::string, std::string> option = {
      {"model.vocab", "the vocabulary"}, {"model.d_model", "--d-model"},       {"model.layers", "--layers"},
      {"model.heads", "--heads"},        {"model.kv_heads", "--kv-heads"},     {"model.ffn", "--ffn"},
      {"model.dtype", "the dtype"},      {"model.experts", "--moe"},           {"model.top_k", "--moe"},
      {"model.capacity_factor", "--capacity-factor"}, {"model.aux_loss_coef", "--aux-loss-coef"},
      {"schedule.kind", "--lr-schedule"},   {"schedule.lr", "--lr"},
      {"schedule.min_lr", "--min-lr"},   {"schedule.warmup", "--warmup"},      {"schedule.total", "--lr-steps"},
      {"data.held_out_percent", "--eval-every holds out the corpus's tail"}};
  std::map<std::string, std::string> now = run_metadata(config, schedule, held_out_percent);
  std::string warning;
  for (const auto& [key, value] : now) {
    auto it = saved.find(key);
    if (it == saved.end()) {
      if (warning.empty())
        warning = fmt::format("warning: --resume {}: the checkpoint records no {} (saved by an older tessera); it is "
                              "not checked, only the arrays' shapes are",
                              resume, key);
      continue;
    }
    if (it->second != value)
      fail("--resume {}: the checkpoint's {} is {}, this run's is {} ({}); resume with the checkpoint's value", resume,
           key, it->second, value, option.at(key));
  }
  return warning;
}

void check_checkpoint_options(const TrainCommand& c) {
  namespace fs = std::filesystem;
  for (fs::path p = c.save; !c.save.empty() && !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (fs::exists(st)) {
      if (!fs::is_directory(st)) fail("--save {}: {} is not a directory", c.save, p.string());
      break;
    }
    if (p == p.parent_path()) break;
  }
  if (c.save_every > 0 && c.save.empty()) fail("--save-every {}: needs --save DIR to save into", c.save_every);
  if (c.keep < 1) fail("--keep {}: at least the newest checkpoint is kept", c.keep);
  if (c.eval_batches < 1) fail("--eval-batches {}: expected a positive number", c.eval_batches);
}

std::vector<std::string> checkpoint_state_names(const std::vector<nn::ParamSpec>& parameters) {
  std::vector<std::string> names;
  for (const nn::ParamSpec& p : parameters) names.push_back(p.name);
  for (const char* kind : {"m.", "v."})
    for (const nn::ParamSpec& p : parameters) names.push_back(kind + p.name);
  return names;
}

void check_checkpoint_arrays(const std::string& resume, const runtime::CheckpointReader& reader,
                             const std::vector<std::string>& names, const std::vector<nn::ParamSpec>& parameters,
                             ir::ElementType dtype) {
  for (size_t i = 0; i < names.size(); ++i) {
    ir::Type want(dtype, parameters[i % parameters.size()].shape);
    if (!reader.has(names[i])) fail("--resume {}: the checkpoint has no \"{}\"", resume, names[i]);
    if (const ir::Type& got = reader.type(names[i]); got != want)
      fail("--resume {}: \"{}\" is {} in the checkpoint, this model's is {}", resume, names[i], ir::to_string(got),
           ir::to_string(want));
  }
}

}  // namespace tessera::tools
