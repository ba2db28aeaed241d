#pragma once
/// @file error.hpp
/// One error hierarchy for the whole library. Messages name the function, file, line or node
/// and the bad value; library code never calls abort() or exit().
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dnncost {

/// Base of every exception dnncost throws.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
/// A hyper-parameter or option that makes no sense (negative width, unknown preset, ...).
class config_error : public error {
public:
    using error::error;
};
/// Tensor or matrix dimensions that do not fit together.
class shape_error : public error {
public:
    using error::error;
};
/// Malformed input text or file content; the message names the file and line or node.
class parse_error : public error {
public:
    using error::error;
};
/// A file that cannot be opened, read or written.
class io_error : public error {
public:
    using error::error;
};
/// ONNX model that cannot be imported (names file and node).
class onnx_import_error : public parse_error {
public:
    using parse_error::parse_error;
};
/// A feature that exists in the interface but not for this input (e.g. an unsupported operator).
class not_implemented : public error {
public:
    using error::error;
};

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}
}  // namespace detail

/// Throw an exception of type E whose message is the concatenation of the arguments.
/// Built without exceptions (-fno-exceptions, embedded toolchains), it prints the message to stderr
/// and aborts instead: there is no other way to leave.
template <class E = error, class... Args>
[[noreturn]] void raise(Args&&... args) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    throw E(detail::concat(std::forward<Args>(args)...));
#else
    std::fputs(("dnncost: error: " + detail::concat(std::forward<Args>(args)...) + "\n").c_str(), stderr);
    std::abort();
#endif
}

}  // namespace dnncost

/// Internal invariant check. Override by defining DNNCOST_ASSERT before including dnncost.
#ifndef DNNCOST_ASSERT
#define DNNCOST_ASSERT(cond)                                                                                  \
    do {                                                                                                      \
        if (!(cond))                                                                                          \
            ::dnncost::raise<::dnncost::error>("internal invariant violated: ", #cond, " at ", __FILE__, ":", \
                                               __LINE__);                                                     \
    } while (false)
#endif
