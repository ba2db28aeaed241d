// The Python module `dnncost` (docs/python.md): pricing with saved estimators and inspecting
// networks. Everything heavy is in the compiled library; this file converts arguments and results
// and releases the GIL around the C++ work.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "module.hpp"

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/memory.hpp>
#include <dnncost/estimators/estimator_cost.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/estimators/training.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/registry.hpp>

namespace py = pybind11;

namespace dnncost::python {
namespace {

/// One network as the caller named it, read while the GIL is held; built into a graph without it.
struct Input {
    enum class Kind { onnx_bytes, path_or_arch, arch } kind;
    std::string data;  ///< the bytes, the path or the architecture string
    std::string name;  ///< as messages and breakdowns name it
};

/// bytes / bytearray / memoryview: an ONNX model in memory; str / os.PathLike: an ONNX file, or
/// `SPACE:ARCH` as the CLI's `predict` takes it.
Input read_input(py::handle x, std::size_t index) {
    if (py::isinstance<py::bytes>(x) || py::isinstance<py::bytearray>(x) || py::isinstance<py::memoryview>(x)) {
        const py::bytes b = py::isinstance<py::bytes>(x) ? py::reinterpret_borrow<py::bytes>(x)
                                                        : py::bytes(py::module_::import("builtins").attr("bytes")(x));
        return {Input::Kind::onnx_bytes, std::string(b), "<bytes " + std::to_string(index) + ">"};
    }
    if (py::isinstance<py::str>(x) || py::hasattr(x, "__fspath__")) {
        std::string s = py::str(py::module_::import("os").attr("fspath")(x));
        return {Input::Kind::path_or_arch, s, s};
    }
    throw py::type_error("dnncost: a network is an ONNX file path, the bytes of an ONNX model or 'SPACE:ARCH'; got " +
                         std::string(py::str(py::type::of(x).attr("__name__"))));
}

/// One input or a list of them; `single` tells which the caller gave.
std::vector<Input> read_inputs(py::handle x, bool& single) {
    std::vector<Input> out;
    single = !py::isinstance<py::list>(x) && !py::isinstance<py::tuple>(x);
    if (single) {
        out.push_back(read_input(x, 0));
    } else {
        std::size_t i = 0;
        for (auto item : x) out.push_back(read_input(item, i++));
    }
    return out;
}

std::vector<Input> arch_inputs(const std::vector<std::string>& archs) {
    std::vector<Input> out;
    out.reserve(archs.size());
    for (const auto& a : archs) out.push_back({Input::Kind::arch, a, a});
    return out;
}

/// The graph of an input (no GIL needed). Bare architecture strings are of `space`.
graph::Graph build(const Input& in, const std::string& space, const spaces::SpaceOptions& options) {
    switch (in.kind) {
        case Input::Kind::onnx_bytes:
            return io::import_onnx_bytes(in.data, in.name);
        case Input::Kind::path_or_arch:
            if (const auto n = spaces::parse_network_name(in.data)) return n->build(options);
            return io::import_onnx(in.data);
        case Input::Kind::arch:
            if (const auto n = spaces::parse_network_name(in.data)) return n->build(options);
            return spaces::find_space(space).build_graph(in.data, options);
    }
    raise<config_error>("dnncost: unknown input kind");
}

/// A network's cost breakdown, as `dnncost predict --per-kernel --json` gives it.
struct Breakdown {
    double total_ms = 0, run_overhead_ms = 0;
    std::vector<cost::KernelCost> kernels;
    std::vector<std::string> node_names, fallbacks, beyond_samples;
};

/// Everything a predict call computes, without the GIL.
struct Priced {
    estimators::PredictReport report;
    std::vector<Breakdown> breakdowns;
};

Priced price(const Model& m, const std::vector<Input>& inputs, const std::string& space, const std::string& options,
             bool per_kernel) {
    const auto opts = spaces::space_options(options);
    if (!space.empty()) (void)spaces::find_space(space);  // unknown even when every string names its own
    std::vector<graph::Graph> graphs;
    graphs.reserve(inputs.size());
    std::vector<std::string> names;
    for (const auto& in : inputs) {
        graphs.push_back(build(in, space, opts));
        names.push_back(in.name);
    }
    std::vector<const graph::Graph*> ptrs;
    for (const auto& g : graphs) ptrs.push_back(&g);
    Priced p;
    p.report = estimators::predict_networks(*m.est, ptrs, names);  // one batched call
    if (per_kernel) {
        const estimators::EstimatorCost source(m.est);
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const auto c = source.cost(graphs[i]);
            Breakdown b{c.total_ms, c.run_overhead_ms, c.by_kernel(graphs[i]), {}, c.fallbacks, c.beyond_samples};
            for (const auto& n : graphs[i].nodes()) b.node_names.push_back(n.name);
            p.breakdowns.push_back(std::move(b));
        }
    }
    return p;
}

py::object breakdown_dict(const Breakdown& b, const std::string& name) {
    py::list kernels;
    for (const auto& k : b.kernels) {
        py::list nodes;
        for (int n : k.nodes) nodes.append(b.node_names.at(static_cast<std::size_t>(n)));
        kernels.append(py::dict(py::arg("kernel") = k.name, py::arg("ms") = k.ms, py::arg("nodes") = nodes));
    }
    return py::dict(py::arg("input") = name, py::arg("total_ms") = b.total_ms,
                    py::arg("run_overhead_ms") = b.run_overhead_ms, py::arg("kernels") = kernels,
                    py::arg("fallbacks") = b.fallbacks, py::arg("beyond_samples") = b.beyond_samples);
}

py::object predict(const Model& m, const std::vector<Input>& inputs, bool single, const std::string& space,
                   const std::string& options, bool per_kernel) {
    Priced p;
    {
        py::gil_scoped_release release;
        p = price(m, inputs, space, options, per_kernel);
    }
    if (const auto w = p.report.unknown.warning(); !w.empty())
        if (PyErr_WarnEx(PyExc_UserWarning, ("dnncost: " + w).c_str(), 1) != 0) throw py::error_already_set();
    py::list out;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (per_kernel) {
            out.append(breakdown_dict(p.breakdowns[i], inputs[i].name));
        } else if (p.report.columns.size() == 1) {
            out.append(p.report.values[i][0]);
        } else {  // a multi-target model: one value per quantity it learnt
            py::dict row;
            for (std::size_t k = 0; k < p.report.columns.size(); ++k) row[py::str(p.report.columns[k])] = p.report.values[i][k];
            out.append(row);
        }
    }
    return single ? py::object(out[0]) : py::object(out);
}

Model load(const std::string& path) {
    py::gil_scoped_release release;
    const auto bytes = io::read_file(path);
    Model m;
    m.meta = io::read_container(bytes, std::nullopt, path).metadata;
    m.est = estimators::load_estimator(bytes, path);
    m.source = path;
    return m;
}

void save(const Model& m, const std::string& path) {
    py::gil_scoped_release release;
    const auto bytes = m.est->serialize();
    io::write_file_atomic(path, m.meta.empty() ? bytes : io::with_metadata(bytes, m.meta, path));
}

py::dict inspect(py::handle x) {
    bool single = true;
    const auto inputs = read_inputs(x, single);
    if (!single) throw py::type_error("dnncost.inspect: one network at a time");
    graph::Graph g;
    std::vector<cost::NodeCost> per_node;
    cost::NodeCost total;
    cost::PeakMemory memory;
    {
        py::gil_scoped_release release;
        g = build(inputs[0], "", {});
        per_node = cost::annotate(g);
        total = cost::total_cost(g);
        memory = cost::peak_memory(g);
    }
    std::map<std::string, int> ops;
    py::list name, op, shape, macs, flops, params, bytes;
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& n = g.nodes()[i];
        ++ops[n.op_type];
        name.append(n.name);
        op.append(n.op_type);
        shape.append(py::cast(n.outputs.empty() ? graph::Shape{} : g.tensor(n.outputs[0]).shape));
        macs.append(per_node[i].macs);
        flops.append(per_node[i].flops);
        params.append(per_node[i].params);
        bytes.append(per_node[i].bytes());
    }
    py::list in;
    for (int t : g.inputs())
        in.append(py::dict(py::arg("name") = g.tensor(t).name, py::arg("shape") = py::cast(g.tensor(t).shape)));
    py::dict d;
    d["model"] = inputs[0].name;
    d["nodes"] = g.num_nodes();
    d["edges"] = g.num_edges();
    d["tensors"] = g.num_tensors();
    d["macs"] = total.macs;
    d["flops"] = total.flops;
    d["params"] = total.params;
    d["bytes"] = total.bytes();
    d["peak_memory"] = py::dict(py::arg("weight_bytes") = memory.weight_bytes,
                                py::arg("peak_activation_bytes") = memory.peak_activation_bytes,
                                py::arg("total_bytes") = memory.total_bytes());
    d["ops"] = ops;
    d["inputs"] = in;
    d["per_node"] = py::dict(py::arg("name") = name, py::arg("op") = op, py::arg("output_shape") = shape,
                             py::arg("macs") = macs, py::arg("flops") = flops, py::arg("params") = params,
                             py::arg("bytes") = bytes);
    return d;
}

/// Seconds per batch of pricing `archs` in C++ alone (graphs built, then one predict call), the
/// best of `repeats`: the reference of bench/python_overhead.py.
double time_cpp_batch(const Model& m, const std::vector<std::string>& archs, const std::string& space, int repeats) {
    py::gil_scoped_release release;
    const auto& s = spaces::find_space(space);
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        std::size_t n = 0;
        {  // the graphs are freed inside the timed part, as a program pricing batches frees them
            std::vector<graph::Graph> graphs;
            graphs.reserve(archs.size());
            for (const auto& a : archs) graphs.push_back(s.build_graph(a, {}));
            std::vector<const graph::Graph*> ptrs;
            for (const auto& g : graphs) ptrs.push_back(&g);
            n = m.est->predict(ptrs).size();
        }
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (n != archs.size()) raise<error>("time_cpp_batch: ", n, " predictions");
        best = std::min(best, t);
    }
    return best;
}

}  // namespace
}  // namespace dnncost::python

PYBIND11_MODULE(dnncost, m) {
    using namespace dnncost::python;
    m.doc() = "dnncost: latency, energy and memory of deep networks on devices (docs/python.md)";

    // One exception type for the library's errors, with the CLI's one-line messages; bad
    // settings are also ValueErrors.
    static py::exception<dnncost::error> error(m, "Error", PyExc_RuntimeError);
    static py::object config_error = [&] {
        py::object t = py::module_::import("builtins")
                           .attr("type")("ConfigError", py::make_tuple(error, py::handle(PyExc_ValueError)),
                                         py::dict(py::arg("__module__") = "dnncost"));
        m.attr("ConfigError") = t;
        return t;
    }();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const dnncost::config_error& e) {
            PyErr_SetString(config_error.ptr(), e.what());
        } catch (const dnncost::error& e) {
            PyErr_SetString(error.ptr(), e.what());
        }
    });

    py::class_<Model>(m, "Estimator", "A saved or trained cost estimator")
        .def_property_readonly("preset", [](const Model& self) { return self.est->preset(); })
        .def_property_readonly("name", [](const Model& self) { return self.est->name(); })
        .def_property_readonly("source", [](const Model& self) { return self.source; })
        .def_property_readonly("metadata", [](const Model& self) { return self.meta; })
        .def_property_readonly("report", [](const Model& self) { return self.report ? self.report : py::object(py::none()); })
        .def(
            "predict",
            [](const Model& self, py::handle x, bool per_kernel, const std::string& space_options) {
                bool single = true;
                const auto inputs = read_inputs(x, single);
                return predict(self, inputs, single, "", space_options, per_kernel);
            },
            py::arg("x"), py::arg("per_kernel") = false, py::arg("space_options") = "",
            "Latency (ms) of an ONNX file, ONNX bytes or 'SPACE:ARCH', or a list of them (one batched call)")
        .def(
            "predict_archs",
            [](const Model& self, py::handle archs, const std::string& space, bool per_kernel,
               const std::string& space_options) {
                const bool single = py::isinstance<py::str>(archs);
                std::vector<std::string> list;
                if (single) {
                    list.push_back(archs.cast<std::string>());
                } else {
                    // any iterable of strings (a list, a tuple, a generator); bytes iterate as numbers
                    if (!py::isinstance<py::iterable>(archs) || py::isinstance<py::bytes>(archs))
                        throw py::type_error("Estimator.predict_archs: archs: expected an architecture string or "
                                             "an iterable of them, got " + std::string(py::repr(archs)));
                    for (auto a : archs)
                        list.push_back(cast_arg<std::string>(
                            a, "Estimator.predict_archs: archs[" + std::to_string(list.size()) + "]",
                            "an architecture string"));
                }
                return predict(self, arch_inputs(list), single, space, space_options, per_kernel);
            },
            py::arg("archs"), py::arg("space") = "nb201", py::arg("per_kernel") = false,
            py::arg("space_options") = "", "Latency (ms) of architecture strings of a search space")
        .def("save", &save, py::arg("path"), "Write the estimator to a .dnnc file (atomically)")
        .def("__repr__", [](const Model& self) { return "<dnncost.Estimator " + self.est->name() + ">"; });

    m.def("load", &load, py::arg("path"), "Load a saved estimator (.dnnc): a device model or a trained one");
    m.def("inspect", &inspect, py::arg("network"),
          "MACs, FLOPs, parameters, bytes, peak memory and a per-node table of an ONNX file, bytes or 'SPACE:ARCH'");
    m.def("spaces", [] {
        std::vector<std::string> names;
        for (const auto& s : dnncost::spaces::all_spaces()) names.emplace_back(s.name);
        return names;
    });
    m.def("presets", &dnncost::estimators::estimator_names, "The estimator presets dnncost.train accepts");
    m.def("_time_cpp_batch", &time_cpp_batch, py::arg("model"), py::arg("archs"), py::arg("space") = "nb201",
          py::arg("repeats") = 5);
    bind_run(m);
}
