// The Python module c10d_torch. Importing it registers torch.distributed backend "c10d":
//
//   import torch.distributed as dist, c10d_torch
//   dist.init_process_group("c10d", init_method="env://")   # or tcp://, file://
//
// Engine: c10d_torch.set_engine("gloo") (before the group is created), else $C10D_TORCH_ENGINE,
// else "verbs". Engine settings: $C10D_TORCH_CONFIG, "KEY=VALUE,KEY=VALUE" (e.g.
// "C10D_TRANSPORT=tcp"), passed to the engine as its config table. The creator releases the GIL
// while it rendezvouses.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdlib>
#include <mutex>

#include "c10d/base/thread_annotations.h"
#include "capi.h"
#include "process_group.h"

namespace py = pybind11;

namespace c10d_torch {
namespace {

c10d::Mutex engineMutex;
std::string engineOverride C10D_GUARDED_BY(engineMutex);  // set_engine()

std::string currentEngine() {
  {
    c10d::MutexLock lock(engineMutex);
    if (!engineOverride.empty()) {
      return engineOverride;
    }
  }
  const char* env = std::getenv("C10D_TORCH_ENGINE");
  return env != nullptr && *env != '\0' ? env : "verbs";
}

// "KEY=VALUE,KEY=VALUE" -> pairs; a malformed entry is an error naming it.
std::vector<std::pair<std::string, std::string>> configFromEnv() {
  std::vector<std::pair<std::string, std::string>> config;
  const char* env = std::getenv("C10D_TORCH_CONFIG");
  if (env == nullptr) {
    return config;
  }
  std::string text = env;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string entry = text.substr(start, end - start);
    const size_t eq = entry.find('=');
    TORCH_CHECK(eq != std::string::npos && eq > 0, "c10d_torch: C10D_TORCH_CONFIG entry '", entry,
                "' is not KEY=VALUE (in '", text, "')");
    config.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    start = end + 1;
  }
  return config;
}

c10::intrusive_ptr<ProcessGroupC10d> createProcessGroup(
    const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ProcessGroupC10d>(store, rank, size, timeout, currentEngine(),
                                               configFromEnv());
}

}  // namespace
}  // namespace c10d_torch

PYBIND11_MODULE(c10d_torch, m) {
  using c10d_torch::ProcessGroupC10d;
  m.doc() = "torch.distributed backend 'c10d': torch's collectives on a c10d engine";
  // torch's base class must be registered with pybind11 before our subclass.
  py::module_ dist = py::module_::import("torch.distributed");

  py::class_<ProcessGroupC10d, c10d_torch::TorchBackendBase, c10::intrusive_ptr<ProcessGroupC10d>>(
      m, "ProcessGroupC10d",
      "A torch backend (a ProcessGroup on torch 1.13) running on a c10d engine")
      .def(py::init([](const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, const std::string& engine,
                       const std::vector<std::pair<std::string, std::string>>& config) {
             return c10::make_intrusive<ProcessGroupC10d>(store, rank, size, timeout, engine,
                                                          config);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("engine") = "verbs",
           py::arg("config") = std::vector<std::pair<std::string, std::string>>{},
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("engine", &ProcessGroupC10d::engine);

  m.def("create_process_group", &c10d_torch::createProcessGroup, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "The creator registered for backend 'c10d' (engine from set_engine / "
        "$C10D_TORCH_ENGINE).");
  m.def(
      "set_engine",
      [](const std::string& engine) {
        c10d::MutexLock lock(c10d_torch::engineMutex);
        c10d_torch::engineOverride = engine;
      },
      py::arg("engine"), "Engine of groups created from now on ('verbs', 'gloo'; '' = default).");
  m.def("engine", &c10d_torch::currentEngine, "The engine the next group will use.");
  m.def(
      "library_path", [] { return c10d_torch::capi().path; }, "The libc10d loaded.");
  m.def("version", [] { return std::string(c10d_torch::capi().c10d_version()); });

#if C10D_TORCH_BACKEND_API
  // CPU tensors only: without `devices`, torch 2.x would route CUDA tensors here too.
  dist.attr("Backend").attr("register_backend")(
      "c10d", m.attr("create_process_group"), py::arg("devices") = std::vector<std::string>{"cpu"});
#else
  dist.attr("Backend").attr("register_backend")("c10d", m.attr("create_process_group"));
#endif
}
