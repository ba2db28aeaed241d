#pragma once
// What a call throws, as text: for the tests' checks of error messages.
#include <string>

#include <dnncost/core/error.hpp>

namespace dnncost::test {

/// The message of the E that `fn` throws, or "<nothing thrown>" when it returns.
template <class E = error, class F>
std::string message_of(F&& fn) {
    try {
        fn();
    } catch (const E& e) {
        return e.what();
    }
    return "<nothing thrown>";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace dnncost::test
