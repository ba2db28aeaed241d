#pragma once
/// @file error.hpp
/// One error hierarchy for the whole library. Messages name the function, file, line or node
/// and the bad value; library code never calls abort() or exit().
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
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

/// `text` made safe to print on one line: control characters (newline, NUL, ESC, ...), DEL and
/// bytes that are not valid UTF-8 become \xNN escapes, so that text from an input file (a node
/// name, a CSV field, a path) can neither forge a second line nor cut the message short.
inline std::string printable(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    auto escape = [&](unsigned char b) {
        out += "\\x";
        out += hex[b >> 4];
        out += hex[b & 15];
    };
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned char b = p[i];
        if (b < 0x20 || b == 0x7f) {
            escape(b);
            ++i;
            continue;
        }
        if (b < 0x80) {
            out += static_cast<char>(b);
            ++i;
            continue;
        }
        // a well-formed UTF-8 sequence (no overlongs, surrogates or code points above U+10FFFF)
        std::size_t len = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
        bool ok = len != 0 && i + len <= n;
        for (std::size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
        if (ok && len == 3) ok = !(b == 0xe0 && p[i + 1] < 0xa0) && !(b == 0xed && p[i + 1] >= 0xa0);
        if (ok && len == 4) ok = !(b == 0xf0 && p[i + 1] < 0x90) && !(b == 0xf4 && p[i + 1] >= 0x90);
        if (!ok) {
            escape(b);
            ++i;
            continue;
        }
        out.append(text.substr(i, len));
        i += len;
    }
    return out;
}

/// The arguments one after another, each as an ostream prints it: for messages.
template <class... Args>
std::string concat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}

/// Throw an exception of type E whose message is the concatenation of the arguments, made
/// printable (see printable()): messages quote text from input files. Built without exceptions
/// (-fno-exceptions, embedded toolchains), it prints the message to stderr and aborts instead:
/// there is no other way to leave.
template <class E = error, class... Args>
[[noreturn]] void raise(Args&&... args) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    throw E(printable(dnncost::concat(std::forward<Args>(args)...)));
#else
    std::fputs(("dnncost: error: " + printable(dnncost::concat(std::forward<Args>(args)...)) + "\n").c_str(), stderr);
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
