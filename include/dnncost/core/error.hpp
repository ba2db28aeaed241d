#pragma once
/// @file error.hpp
/// One error hierarchy for the whole library. Messages name the function, file, line or node
/// and the bad value; library code never calls abort() or exit().
#include <cstdio>
#include <cstdlib>
#include <ios>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <dnncost/core/config.hpp>

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
DNNCOST_FUNC std::string printable(std::string_view text);

/// The arguments one after another, each as an ostream prints it: for messages.
template <class... Args>
std::string concat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}

namespace detail {
/// One argument of an error message, by reference: text, a character, an integer or a
/// floating-point number as itself, anything else with the function that prints it. Messages
/// are put together by one non-template function (format_message), so that a check costs its
/// caller a few stores and a call, not a stream of its own.
struct MessageArg {
    enum class Kind : unsigned char {
        text,
        character,
        signed_integer,
        unsigned_integer,
        floating,
        manipulator,
        other
    };
    Kind kind;
    union Value {
        Value() : signed_integer(0) {}
        std::string_view text;
        char character;
        long long signed_integer;
        unsigned long long unsigned_integer;
        double floating;
        std::ios_base& (*manipulator)(std::ios_base&);  ///< std::fixed, std::hex, ...
        struct {
            const void* object;
            void (*print)(std::ostream&, const void*);
        } other;
    } value;

    template <class T>
    static void print_other(std::ostream& os, const void* object) {
        os << *static_cast<const T*>(object);
    }

    /// From one argument of raise(), character arrays already decayed (message_arg).
    template <class T>
    MessageArg(const T& v) {  // implicit: raise() lists its arguments as MessageArgs
        using U = std::remove_cv_t<T>;
        if constexpr (std::is_same_v<U, std::string> || std::is_same_v<U, std::string_view>) {
            kind = Kind::text;
            value.text = v;
        } else if constexpr (std::is_same_v<U, const char*> || std::is_same_v<U, char*>) {
            kind = Kind::text;
            value.text = v ? std::string_view(v) : std::string_view();
        } else if constexpr (std::is_same_v<U, char> || std::is_same_v<U, signed char> ||
                             std::is_same_v<U, unsigned char>) {
            kind = Kind::character;
            value.character = static_cast<char>(v);
        } else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && std::is_signed_v<U>) {
            kind = Kind::signed_integer;
            value.signed_integer = v;
        } else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool>) {
            kind = Kind::unsigned_integer;
            value.unsigned_integer = v;
        } else if constexpr (std::is_floating_point_v<U> && !std::is_same_v<U, long double>) {
            kind = Kind::floating;
            value.floating = v;
        } else if constexpr (std::is_function_v<U>) {
            kind = Kind::manipulator;
            value.manipulator = v;
        } else {
            kind = Kind::other;
            value.other.object = static_cast<const void*>(&v);
            value.other.print = &print_other<T>;
        }
    }
};

/// The arguments one after another, each as an std::ostream prints it.
DNNCOST_FUNC std::string format_message(const MessageArg* args, std::size_t count);

template <class E>
[[noreturn, gnu::cold, gnu::noinline]] void throw_error(const std::string& message) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    throw E(printable(message));
#else
    std::fputs(("dnncost: error: " + printable(message) + "\n").c_str(), stderr);
    std::abort();
#endif
}

/// A message argument as raise_with takes it: a character array (a string literal) as a
/// pointer, so that messages differing only in their literals' lengths share one instantiation.
template <class T>
decltype(auto) message_arg(const T& v) {
    if constexpr (std::is_array_v<T>)
        return static_cast<const std::remove_extent_t<T>*>(v);
    else
        return v;
}

/// The body of raise(), out of line and cold: a check costs its caller one call.
template <class E, class... Args>
[[noreturn, gnu::cold, gnu::noinline]] void raise_with(const Args&... args) {
    if constexpr (sizeof...(Args) == 0) {
        throw_error<E>(std::string());
    } else {
        const MessageArg list[] = {args...};
        throw_error<E>(format_message(list, sizeof...(Args)));
    }
}
}  // namespace detail

/// Throw an exception of type E whose message is the concatenation of the arguments, made
/// printable (see printable()): messages quote text from input files. Built without exceptions
/// (-fno-exceptions, embedded toolchains), it prints the message to stderr and aborts instead:
/// there is no other way to leave.
template <class E = error, class... Args>
[[noreturn]] void raise(const Args&... args) {
    detail::raise_with<E>(detail::message_arg(args)...);
}

}  // namespace dnncost

#if !defined(DNNCOST_COMPILED)
#include <dnncost/core/error_impl.hpp>
#endif

/// Internal invariant check. Override by defining DNNCOST_ASSERT before including dnncost.
#ifndef DNNCOST_ASSERT
#define DNNCOST_ASSERT(cond)                                                                                  \
    do {                                                                                                      \
        if (!(cond))                                                                                          \
            ::dnncost::raise<::dnncost::error>("internal invariant violated: ", #cond, " at ", __FILE__, ":", \
                                               __LINE__);                                                     \
    } while (false)
#endif
