#pragma once
// What the Python module's two sources share: the estimator object both return and the one-line
// error translation. module.cpp binds pricing and inspection, module_run.cpp measuring, training
// and the search, so that a parallel build compiles them side by side.
#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include <dnncost/estimators/estimator.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::python {

/// A loaded or trained estimator, shared with the Python object that holds it.
struct [[gnu::visibility("hidden")]] Model {  // hidden like pybind11's own types it holds
    std::shared_ptr<estimators::Estimator> est;
    std::string source;   ///< the file it was loaded from; empty for one trained in this process
    io::Metadata meta;    ///< what `dnncost train` wrote with it, kept when it is saved again
    pybind11::object report;  ///< a trained model's test metrics and split (a dict); null for a loaded one
};

/// `value` as a T, or a TypeError that names the argument (`what`), the type it takes (`expected`)
/// and the value given: pybind11's own cast error names none of them.
template <class T>
T cast_arg(pybind11::handle value, const std::string& what, const char* expected) {
    try {
        return value.cast<T>();
    } catch (const pybind11::cast_error&) {
        throw pybind11::type_error(what + ": expected " + expected + ", got " + std::string(pybind11::repr(value)) +
                                   " (" + std::string(pybind11::str(pybind11::type::of(value).attr("__name__"))) + ")");
    }
}

/// Measuring, training and the search (module_run.cpp).
void bind_run(pybind11::module_& m);

}  // namespace dnncost::python
