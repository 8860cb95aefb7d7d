// tessera.train (train.h): keyword arguments set the fields of tools::TrainCommand, one setter per
// option in a table (an unknown keyword is a TypeError naming the known ones); the run's printed
// report is returned with the losses; the callback runs after each step with the GIL held.
#include "tools/python/train.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <sstream>
#include <string>

#include "tools/tessera/train_cmd.h"

namespace tessera::python {

namespace py = pybind11;

namespace {

using Setter = std::function<void(tools::TrainCommand&, py::handle)>;

template <typename T>
Setter field(T tools::TrainCommand::*member) {
  return [member](tools::TrainCommand& c, py::handle v) { c.*member = v.cast<T>(); };
}

const std::map<std::string, Setter>& setters() {
  using C = tools::TrainCommand;
  static const std::map<std::string, Setter> table = {
      {"plan", field(&C::plan)},           {"backend", field(&C::backend)},     {"devices", field(&C::devices)},
      {"steps", field(&C::steps)},         {"batch", field(&C::batch)},         {"seq", field(&C::seq)},
      {"accumulate", field(&C::accumulate)}, {"remat", field(&C::remat)},       {"lr", field(&C::lr)},
      {"weight_decay", field(&C::weight_decay)}, {"no_decay", field(&C::no_decay)},
      {"lr_schedule", field(&C::lr_schedule)}, {"warmup", field(&C::warmup)},   {"min_lr", field(&C::min_lr)},
      {"lr_steps", field(&C::lr_steps)},   {"clip_norm", field(&C::clip_norm)}, {"precision", field(&C::precision)},
      {"d_model", field(&C::d_model)},     {"layers", field(&C::layers)},       {"heads", field(&C::heads)},
      {"kv_heads", field(&C::kv_heads)},   {"ffn", field(&C::ffn)},             {"seed", field(&C::seed)},
      {"corpus", field(&C::corpus)},       {"save", field(&C::save)},           {"resume", field(&C::resume)},
      {"save_every", field(&C::save_every)}, {"keep", field(&C::keep)},         {"eval_every", field(&C::eval_every)},
      {"eval_batches", field(&C::eval_batches)}, {"losses", field(&C::losses)}, {"sample", field(&C::sample)},
      {"profile", field(&C::profile)},     {"dry_run", field(&C::dry_run)},
      {"schedule", field(&C::schedule)},   {"microbatches", field(&C::microbatches)},
      {"virtual_stages", field(&C::virtual_stages)}, {"schedule_svg", field(&C::schedule_svg)},
  };
  return table;
}

py::dict train(const py::object& callback, const py::kwargs& options) {
  tools::TrainCommand c;
  c.sample = 0;  // no generated text unless asked: a script wants the numbers
  for (auto [key, value] : options) {
    std::string name = key.cast<std::string>();
    auto it = setters().find(name);
    if (it == setters().end()) {
      std::vector<std::string> known;
      for (const auto& [k, _] : setters()) known.push_back(k);
      throw py::type_error(fmt::format("train() got an unknown option '{}'; the options are {}", name, fmt::join(known, ", ")));
    }
    try {
      it->second(c, value);
    } catch (const py::cast_error&) {
      throw py::type_error(fmt::format("train(): option '{}' cannot take {}", name, std::string(py::repr(value))));
    }
  }
  std::vector<std::pair<int64_t, double>> losses;
  c.on_step = [&](int64_t step, double loss) {
    losses.emplace_back(step, loss);
    if (!callback.is_none()) {
      py::gil_scoped_acquire gil;
      callback(step, loss);
    }
  };
  std::ostringstream out;
  {
    py::gil_scoped_release release;
    tools::train_command(c, out);
  }
  py::dict result;
  py::list steps, values;
  for (auto [s, l] : losses) {
    steps.append(s);
    values.append(l);
  }
  result["steps"] = steps;
  result["losses"] = values;
  result["report"] = out.str();
  return result;
}

}  // namespace

void bind_train(py::module_& m) {
  m.def("train", &train, py::arg("callback") = py::none(),
        "Trains the byte-level CausalLM as `tessera train` does; keyword arguments are its options "
        "(plan='fsdp', devices=4, steps=100, d_model=64, ...); callback(step, loss) runs after each "
        "step. Returns {'steps', 'losses', 'report'} (report: what the CLI prints).");
}

}  // namespace tessera::python
