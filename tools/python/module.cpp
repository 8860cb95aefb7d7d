// The `tessera` Python package's native part, `tessera._tessera` (tools/python/README.md): modules
// from StableHLO text, partitioning with its report, sessions of host devices (or MPI ranks) that
// run programs on NumPy arrays, sharded programs whose buffers stay on the devices, and training.
// Every UserError becomes a `tessera.Error` carrying the CLI's message; the GIL is released while
// devices compute, so other Python threads run meanwhile.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <sstream>

#include "ir/entry.h"
#include "runtime/session.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "tools/python/arrays.h"
#include "tools/python/train.h"
#include "tools/tessera/cli_options.h"

namespace tessera::python {

namespace {

using support::fail;

// A parsed module, shared by the programs compiled from it.
struct Module {
  std::shared_ptr<ir::Module> m;
  std::string text() const { return stablehlo::print(*m); }
};

const ir::Function& entry(const ir::Module& m, const std::optional<std::string>& name) {
  return ir::entry_function(m, name.value_or(""));
}

// A copy of `module` whose mesh has the axes `mesh` gives ({"data": 4}); the module itself is not
// changed, so one parsed module can be partitioned for several meshes.
std::shared_ptr<ir::Module> with_mesh(const Module& module, const std::optional<std::map<std::string, int64_t>>& mesh) {
  if (!mesh) return module.m;
  std::shared_ptr<ir::Module> copy = stablehlo::parse(stablehlo::print(*module.m), "<module>");
  ir::Mesh axes{"mesh", {}, {}};
  for (const auto& [name, size] : *mesh) axes.axes.push_back({name, size});
  tools::apply_mesh(*copy, axes, "<module>");
  ir::verify(*copy);
  return copy;
}

py::dict collective_dict(const spmd::CollectiveRecord& c) {
  py::dict d;
  d["kind"] = c.kind;
  d["origin"] = c.origin;
  d["group_size"] = c.group_size;
  d["bytes_per_device"] = c.bytes_per_device;
  return d;
}

py::dict report_dict(const spmd::Partitioned& info) {
  py::dict d;
  d["function"] = info.function;
  d["num_devices"] = info.num_devices;
  d["mesh"] = info.mesh;
  py::list params, collectives;
  for (const spmd::ParameterPiece& p : info.report.parameters) {
    py::dict e;
    e["global_shape"] = py::tuple(py::cast(p.global.shape));
    e["local_shape"] = py::tuple(py::cast(p.local_shape));
    e["dtype"] = std::string(ir::spelling(p.global.element));
    e["bytes_per_device"] = p.bytes_per_device;
    e["sharding"] = stablehlo::print(p.sharding);
    params.append(e);
  }
  for (const spmd::CollectiveRecord& c : info.report.collectives) collectives.append(collective_dict(c));
  d["parameters"] = params;
  d["collectives"] = collectives;
  d["bytes_per_device"] = info.report.bytes_per_device();
  d["table"] = info.report.to_string();
  return d;
}

// A compiled program and what it needs alive.
struct Program {
  std::shared_ptr<ir::Module> source;
  runtime::CompiledProgram compiled;
  std::vector<ir::Type> parameter_types() const { return compiled.info.parameter_types; }
};

std::vector<ir::Literal> inputs_for(const Program& p, const py::sequence& values, std::vector<py::object>& keep,
                                    const std::vector<ir::Type>& types) {
  if (values.size() != types.size())
    fail("@{} takes {} input{}, got {}", p.compiled.info.function, types.size(), types.size() == 1 ? "" : "s", values.size());
  std::vector<ir::Literal> out;
  keep.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back(to_literal(values[i], types[i], keep[i], fmt::format("input {} of @{}", i, p.compiled.info.function)));
  return out;
}

py::list to_list(std::vector<ir::Literal> values) {
  py::list out;
  for (ir::Literal& v : values) out.append(to_numpy(std::move(v)));
  return out;
}

struct Session {
  std::shared_ptr<runtime::Session> s;

  Program compile(const Module& module, const std::optional<std::string>& function,
                  const std::optional<std::map<std::string, int64_t>>& mesh) const {
    std::shared_ptr<ir::Module> m = with_mesh(module, mesh);
    return Program{m, s->compile(*m, entry(*m, function).name())};
  }

  py::list run_sharded(const Program& p, const py::sequence& values) const {
    std::vector<py::object> keep;
    std::vector<ir::Literal> inputs = inputs_for(p, values, keep, p.parameter_types());
    std::vector<ir::Literal> results;
    {
      py::gil_scoped_release release;
      results = s->run_sharded(p.compiled, inputs);
    }
    return to_list(std::move(results));
  }

  // inputs[device][parameter] -> results[device][result]: each device's own local pieces.
  py::list run_per_device(const Program& p, const py::sequence& per_device) const {
    if (static_cast<int64_t>(per_device.size()) != s->num_devices())
      fail("run_per_device: {} lists of inputs for {} devices", per_device.size(), s->num_devices());
    std::vector<std::vector<py::object>> keep(per_device.size());
    std::vector<std::vector<ir::Literal>> inputs;
    const ir::Function& local = p.compiled.local_function();
    std::vector<ir::Type> local_types;
    for (size_t i = 0; i < local.num_parameters(); ++i) local_types.push_back(local.parameter(i)->type());
    for (size_t d = 0; d < per_device.size(); ++d)
      inputs.push_back(inputs_for(p, per_device[d].cast<py::sequence>(), keep[d], local_types));
    std::vector<std::vector<ir::Literal>> results;
    {
      py::gil_scoped_release release;
      results = s->run_per_device(p.compiled, std::move(inputs));
    }
    py::list out;
    for (auto& r : results) out.append(to_list(std::move(r)));
    return out;
  }
};

struct Buffer {
  runtime::ShardedBuffer b;
};

struct ShardedProgram {
  std::shared_ptr<runtime::Session> session;
  Program program;
  std::shared_ptr<runtime::ShardedProgram> p;

  Buffer stage(size_t index, py::handle value) const {
    const auto& types = program.parameter_types();
    if (index >= types.size()) fail("stage: @{} has {} parameters, no parameter {}", program.compiled.info.function, types.size(), index);
    py::object keep;
    ir::Literal host = to_literal(value, types[index], keep, fmt::format("parameter {} of @{}", index, program.compiled.info.function));
    py::gil_scoped_release release;
    return Buffer{p->stage(index, host)};
  }

  std::vector<Buffer> execute(std::vector<Buffer*> inputs) const {
    // The runtime gets the buffers (a donated one must have no other holder to be reused in place);
    // they go back to their Python objects afterwards, donated ones marked spent.
    std::vector<runtime::ShardedBuffer> in;
    for (Buffer* b : inputs) in.push_back(std::move(b->b));
    auto give_back = [&] {
      for (size_t i = 0; i < inputs.size(); ++i) inputs[i]->b = in[i];
    };
    std::vector<runtime::ShardedBuffer> out;
    try {
      py::gil_scoped_release release;
      out = p->execute(in);
    } catch (...) {
      give_back();
      throw;
    }
    give_back();
    std::vector<Buffer> results;
    for (auto& b : out) results.push_back(Buffer{std::move(b)});
    return results;
  }

  py::array fetch(const Buffer& b) const {
    if (b.b.donated()) fail("fetch: the buffer was donated to an earlier execute");
    ir::Literal whole;
    {
      py::gil_scoped_release release;
      whole = p->fetch(b.b);
    }
    return to_numpy(std::move(whole));
  }
};

}  // namespace

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera: sharded tensor programs (StableHLO in), partitioned and run on host devices or MPI ranks";
  static py::exception<support::UserError> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const support::UserError& e) {
      error(e.what());
    }
  });

  py::class_<Module>(m, "Module", "A StableHLO module (with Shardy meshes and shardings)")
      .def("text", &Module::text, "The module as StableHLO text (print -> parse -> print is the identity)")
      .def_property_readonly("functions", [](const Module& mod) {
        std::vector<std::string> names;
        for (const auto& f : mod.m->functions) names.push_back(f->name());
        return names;
      })
      .def("__repr__", [](const Module& mod) { return fmt::format("<tessera.Module @{}>", mod.m->name); });

  m.def("parse", [](const std::string& text, const std::string& name) {
    return Module{std::shared_ptr<ir::Module>(stablehlo::parse(text, name))};
  }, py::arg("text"), py::arg("name") = "<string>", "Parses StableHLO text (as jax.jit(f).lower(x).as_text() writes it)");

  m.def("partition", [](const Module& module, std::optional<std::map<std::string, int64_t>> mesh,
                        std::optional<std::string> function) {
    std::shared_ptr<ir::Module> src = with_mesh(module, mesh);
    ir::Module local(src->name);
    spmd::Partitioned info = spmd::partition(*src, entry(*src, function), local);
    py::dict d = report_dict(info);
    d["text"] = stablehlo::print(local);
    return d;
  }, py::arg("module"), py::arg("mesh") = py::none(), py::arg("function") = py::none(),
     "The per-device program (text) and what it communicates (parameters, collectives, bytes)");

  py::class_<Program>(m, "Program", "A program compiled (propagated and partitioned) for a session")
      .def_property_readonly("report", [](const Program& p) { return report_dict(p.compiled.info); })
      .def_property_readonly("text", [](const Program& p) { return stablehlo::print(*p.compiled.module); });

  py::class_<Buffer>(m, "Buffer", "An array kept on the devices, one piece per device")
      .def_property_readonly("shape", [](const Buffer& b) { return py::tuple(py::cast(b.b.type.shape)); })
      .def_property_readonly("dtype", [](const Buffer& b) { return std::string(ir::spelling(b.b.type.element)); })
      .def_property_readonly("sharding", [](const Buffer& b) { return stablehlo::print(b.b.sharding); })
      .def_property_readonly("donated", [](const Buffer& b) { return b.b.donated(); })
      .def_property_readonly("local_bytes", [](const Buffer& b) { return b.b.local_bytes(); });

  py::class_<ShardedProgram>(m, "ShardedProgram", "A program with its inputs staged on the devices")
      .def("stage", &ShardedProgram::stage, py::arg("index"), py::arg("value"))
      .def("execute", &ShardedProgram::execute, py::arg("inputs"))
      .def("fetch", &ShardedProgram::fetch, py::arg("buffer"));

  py::class_<Session>(m, "Session", "Devices to run programs on")
      .def_static("host", [](int64_t n, double timeout) {
        runtime::SessionOptions o;
        o.timeout = runtime::timeout_from_seconds(timeout, "timeout");
        return Session{std::make_shared<runtime::Session>(runtime::Session::host(n, o))};
      }, py::arg("devices"), py::arg("timeout") = 60.0, "n host devices (threads of this process)")
      .def_static("mpi", [](int64_t local, double timeout) {
        runtime::SessionOptions o;
        o.timeout = runtime::timeout_from_seconds(timeout, "timeout");
        return Session{std::make_shared<runtime::Session>(runtime::Session::mpi(local, o))};
      }, py::arg("devices_per_rank") = 1, py::arg("timeout") = 60.0, "this rank's part of a session over MPI ranks (under mpirun)")
      .def_property_readonly("num_devices", [](const Session& s) { return s.s->num_devices(); })
      .def_property_readonly("rank", [](const Session& s) { return s.s->rank(); })
      .def("compile", &Session::compile, py::arg("module"), py::arg("function") = py::none(), py::arg("mesh") = py::none())
      .def("run_sharded", &Session::run_sharded, py::arg("program"), py::arg("inputs"),
           "Whole arrays in (split by the program's shardings), whole arrays out")
      .def("run_per_device", &Session::run_per_device, py::arg("program"), py::arg("inputs"),
           "inputs[device][parameter] (each device's local piece) -> results[device][result]")
      .def("sharded_program", [](const Session& s, const Program& p, std::map<size_t, size_t> donate) {
        std::vector<std::pair<size_t, size_t>> aliases(donate.begin(), donate.end());
        return ShardedProgram{s.s, p, std::make_shared<runtime::ShardedProgram>(s.s->sharded_program(p.compiled, aliases))};
      }, py::arg("program"), py::arg("donate") = std::map<size_t, size_t>{},
           "Stage inputs once, execute many times; donate={input: output} aliases an input to an output");

  bind_train(m);
}

}  // namespace tessera::python
