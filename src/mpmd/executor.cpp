// The executor (executor.h): one thread per mesh, a store per mesh, mailboxes for transfers.
#include "mpmd/executor.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "runtime/session.h"
#include "mpmd/value_slots.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Literal;
using support::fail;

namespace {

int64_t bytes_of(const Literal& l) { return static_cast<int64_t>(l.bytes().size()); }

}  // namespace

struct Executor::Impl {
  std::vector<std::unique_ptr<runtime::Session>> sessions;      // per mesh; null: the interpreter
  std::vector<std::optional<runtime::CompiledProgram>> compiled;  // per fragment, for session meshes
  std::vector<std::vector<size_t>> fragments_of;                // per mesh, program order
  std::multimap<std::pair<size_t, size_t>, size_t> sends;       // (value, from mesh) -> destination mesh
  std::map<std::pair<size_t, size_t>, bool> used_locally;       // (value, mesh): a fragment there reads it
};

Executor::Executor(const FragmentPlan& plan, ExecutorOptions options)
    : plan_(plan), options_(options), impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.fragments_of.resize(plan.meshes.size());
  for (size_t m = 0; m < plan.meshes.size(); ++m) {
    const MeshSpec& mesh = plan.meshes[m];
    runtime::SessionOptions so;
    so.fast_kernels = options.fast_kernels;
    so.timeout = options.transfer_timeout;
    im.sessions.push_back(mesh.spmd_mesh.empty() ? nullptr
                                                 : std::make_unique<runtime::Session>(runtime::Session::host(mesh.devices, so)));
  }
  im.compiled.resize(plan.fragments.size());
  for (const Fragment& f : plan.fragments) {
    im.fragments_of[f.mesh].push_back(f.index);
    for (const Binding& b : f.inputs)
      if (b.kind == Binding::Kind::kValue) im.used_locally[{b.index, f.mesh}] = true;
    if (const auto& s = im.sessions[f.mesh]) {
      try {
        im.compiled[f.index] = s->compile(*f.module, f.function);
      } catch (const support::UserError& e) {
        fail("fragment {} on mesh '{}': {}", f.index, plan.meshes[f.mesh].name, e.what());
      }
    }
  }
  for (const Transfer& t : plan.transfers) im.sends.insert({{t.value, t.from}, t.to});
}

Executor::~Executor() = default;

int64_t Executor::devices_of(size_t f) const {
  const auto& c = impl_->compiled.at(f);
  return c ? c->info.num_devices : 1;
}

std::vector<Literal> Executor::run(const std::vector<Literal>& parameters) {
  const FragmentPlan& plan = plan_;
  Impl& im = *impl_;
  if (parameters.size() != plan.parameter_types.size())
    fail("mpmd run: the step takes {} parameters, got {}", plan.parameter_types.size(), parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].type() != plan.parameter_types[i])
      fail("mpmd run: parameter {} is {}, the step's parameter %arg{} is {}", i, ir::to_string(parameters[i].type()), i,
           ir::to_string(plan.parameter_types[i]));

  ValueSlots<> mail;
  std::mutex mu;  // guards results and stats
  std::vector<std::optional<Literal>> results(plan.results.size());
  stats_ = ExecutionStats{};
  stats_.spans.resize(plan.fragments.size());
  stats_.peak_store_bytes.assign(plan.meshes.size(), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto ms_since = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - t0).count();
  };
  std::multimap<size_t, size_t> result_slots;  // value id -> result index
  for (size_t r = 0; r < plan.results.size(); ++r) {
    const Binding& b = plan.results[r];
    if (b.kind == Binding::Kind::kParameter) results[r] = parameters[b.index];
    else if (b.kind == Binding::Kind::kConstant) results[r] = b.constant;
    else result_slots.insert({b.index, r});
  }

  auto run_mesh = [&](size_t m) {
    std::unordered_map<size_t, Literal> store;
    int64_t held = 0;
    for (const Transfer& t : plan.transfers)  // copies of this mesh's parameters for other meshes
      if (t.from == m && plan.values[t.value].parameter) {
        {
          std::lock_guard lock(mu);
          stats_.transferred_bytes += bytes_of(parameters[*plan.values[t.value].parameter]);
        }
        mail.post(t.value, t.to, parameters[*plan.values[t.value].parameter]);
      }
    for (size_t fi : im.fragments_of[m]) {
      const Fragment& f = plan.fragments[fi];
      std::vector<Literal> inputs;
      for (const Binding& b : f.inputs) {
        if (b.kind == Binding::Kind::kParameter) {
          inputs.push_back(parameters[b.index]);
          continue;
        }
        auto it = store.find(b.index);
        if (it == store.end()) {  // a transfer from another mesh: wait for it, keep it for later readers
          const PlanValue& v = plan.values[b.index];
          std::optional<Literal> got = mail.take(b.index, m, options_.transfer_timeout);
          if (!got) {
            if (mail.aborted()) return;
            fail("fragment {} on mesh '{}' waits for {} from {}: nothing arrived within {} ms", fi, plan.meshes[m].name,
                 v.name,
                 v.parameter ? std::string("its parameter's mesh")
                             : fmt::format("fragment {} on mesh '{}'", v.producer,
                                           plan.meshes[plan.fragments[v.producer].mesh].name),
                 options_.transfer_timeout.count());
          }
          held += bytes_of(*got);
          it = store.emplace(b.index, std::move(*got)).first;
        }
        inputs.push_back(it->second);
      }
      auto start = std::chrono::steady_clock::now();
      std::vector<Literal> outputs;
      try {
        if (im.sessions[m]) {
          outputs = im.sessions[m]->run_sharded(*im.compiled[fi], inputs);
        } else {
          interp::Options o;
          if (options_.fast_kernels) o.accelerate = exec::accelerate;
          outputs = interp::evaluate(*f.module, f.function, std::move(inputs), o);
        }
      } catch (const support::UserError& e) {
        fail("fragment {} on mesh '{}' ({}): {}", fi, plan.meshes[m].name,
             f.origin ? f.origin->to_string() : std::string("unnamed ops"), e.what());
      }
      auto end = std::chrono::steady_clock::now();
      for (size_t k = 0; k < f.outputs.size(); ++k) {
        size_t id = f.outputs[k];
        auto [lo, hi] = im.sends.equal_range({id, m});
        for (auto s = lo; s != hi; ++s) {
          {
            std::lock_guard lock(mu);
            stats_.transferred_bytes += bytes_of(outputs[k]);
          }
          mail.post(id, s->second, outputs[k]);  // a copy: the producer may still read it
        }
        {
          std::lock_guard lock(mu);
          auto [rlo, rhi] = result_slots.equal_range(id);
          for (auto r = rlo; r != rhi; ++r) results[r->second] = outputs[k];
        }
        if (im.used_locally.count({id, m})) {
          held += bytes_of(outputs[k]);
          store.emplace(id, std::move(outputs[k]));
        }
      }
      {
        std::lock_guard lock(mu);
        stats_.spans[fi] = {fi, ms_since(start), ms_since(end)};
        stats_.peak_store_bytes[m] = std::max(stats_.peak_store_bytes[m], held);
      }
      for (size_t id : f.frees)
        if (auto it = store.find(id); it != store.end()) {
          held -= bytes_of(it->second);
          store.erase(it);
        }
    }
  };

  run_on_threads(plan.meshes.size(), run_mesh, mail);
  std::vector<Literal> out;
  for (size_t r = 0; r < results.size(); ++r) {
    TESSERA_CHECK(results[r].has_value(), "result {} of the step was never computed", r);
    out.push_back(std::move(*results[r]));
  }
  return out;
}

}  // namespace tessera::mpmd
