#pragma once
/// @file serialize.hpp
/// A small versioned, checksummed binary container for saved models, and the byte-level
/// writer/reader classes that fill its payload portably.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::io {

/// Layout of a container (all integers little-endian, whatever the host):
///
///     offset  size  field
///     0       8     magic "\x89DNNC\r\n\x1a" (catches text-mode mangling and non-model files)
///     8       4     format version (u32), currently container_format_version
///     12      4+n   kind: u32 length + UTF-8 bytes (e.g. "additive", "ensemble", "hifisage")
///     ..      8     config hash (u64): whoever writes the payload decides what it covers
///     ..      8+m   payload: u64 length + bytes
///     ..      4+..  metadata (version >= 2): u32 count, then count (key, value) string pairs
///     ..      4     CRC-32 (IEEE 802.3, reflected 0xEDB88320) of every byte before it
///
/// The metadata are what the tool that trained a model knows about it and the model itself does
/// not need to predict: the measured column it learned, the search space, the data file
/// (`dnncost train` writes them; `eval`/`predict` warn when they are used otherwise). Version 1
/// files have none and still load.
///
/// The payload is opaque here; BinaryWriter/BinaryReader give it a portable encoding: scalars
/// little-endian, IEEE-754 floats by bit pattern, strings and vectors length-prefixed (u64).
/// A reader never trusts a length: every read is bounds-checked first and throws parse_error
/// naming the source and the field that is truncated.

/// Version written by write_container; read_container accepts this and every older version.
inline constexpr std::uint32_t container_format_version = 2;
/// The 8 magic bytes that open every container.
inline constexpr std::array<char, 8> container_magic{'\x89', 'D', 'N', 'N', 'C', '\r', '\n', '\x1a'};

/// CRC-32 (IEEE, as in zlib/PNG) of `data`, optionally continuing from a previous value.
inline std::uint32_t crc32(std::string_view data, std::uint32_t previous = 0) {
    static constexpr auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1u) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = ~previous;
    for (unsigned char byte : data) c = table[(c ^ byte) & 0xFFu] ^ (c >> 8);
    return ~c;
}

/// 64-bit FNV-1a hash, handy to build a container's config hash from a canonical string.
inline std::uint64_t fnv1a64(std::string_view data, std::uint64_t seed = 0xcbf29ce484222325ULL) {
    std::uint64_t h = seed;
    for (unsigned char byte : data) {
        h ^= byte;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// Appends values to a byte string in the portable encoding described above.
class BinaryWriter {
public:
    void put_u8(std::uint8_t v) { m_bytes.push_back(static_cast<char>(v)); }
    void put_bool(bool v) { put_u8(v ? 1 : 0); }
    void put_u32(std::uint32_t v) { put_le(v); }
    void put_u64(std::uint64_t v) { put_le(v); }
    void put_i32(std::int32_t v) { put_le(static_cast<std::uint32_t>(v)); }
    void put_i64(std::int64_t v) { put_le(static_cast<std::uint64_t>(v)); }
    void put_f32(float v) { put_le(std::bit_cast<std::uint32_t>(v)); }
    void put_f64(double v) { put_le(std::bit_cast<std::uint64_t>(v)); }
    /// Length-prefixed bytes; any content (also binary, e.g. a nested container).
    void put_string(std::string_view s) {
        put_u64(s.size());
        m_bytes.append(s.data(), s.size());
    }
    void put_f32_vector(std::span<const float> v) { put_vector(v); }
    void put_f64_vector(std::span<const double> v) { put_vector(v); }
    void put_i64_vector(std::span<const std::int64_t> v) { put_vector(v); }
    void put_u32_vector(std::span<const std::uint32_t> v) { put_vector(v); }
    void put_string_vector(std::span<const std::string> v) {
        put_u64(v.size());
        for (const auto& s : v) put_string(s);
    }
    /// Length-prefixed vector of any fixed-size arithmetic type.
    template <class T>
    requires std::is_arithmetic_v<T>
    void put_vector(std::span<const T> v) {
        put_u64(v.size());
        for (const T& x : v) put_scalar(x);
    }

    const std::string& bytes() const& { return m_bytes; }
    std::string take() && { return std::move(m_bytes); }
    std::size_t size() const { return m_bytes.size(); }

private:
    template <class T>
    void put_scalar(T x) {
        if constexpr (std::is_same_v<T, bool>)
            put_bool(x);
        else if constexpr (std::is_floating_point_v<T>) {
            static_assert(sizeof(T) == 4 || sizeof(T) == 8, "only float and double are portable");
            if constexpr (sizeof(T) == 4)
                put_f32(x);
            else
                put_f64(x);
        } else if constexpr (sizeof(T) == 1)
            put_u8(static_cast<std::uint8_t>(x));
        else
            put_le(static_cast<std::make_unsigned_t<T>>(x));
    }
    template <class U>
    void put_le(U v) {
        static_assert(std::is_unsigned_v<U>);
        for (std::size_t i = 0; i < sizeof(U); ++i) m_bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
    }
    std::string m_bytes;
};

/// Reads what BinaryWriter wrote, from a view it does not own. Each getter takes the name of
/// the field it reads so that a truncation says which field was cut:
/// "model.dnnc: truncated: 'weights' needs 800 bytes at offset 96, only 12 left".
class BinaryReader {
public:
    explicit BinaryReader(std::string_view data, std::string source = "<memory>")
        : m_data(data), m_source(std::move(source)) {}

    std::uint8_t get_u8(std::string_view what = "u8") {
        need(1, what);
        return static_cast<std::uint8_t>(m_data[m_pos++]);
    }
    bool get_bool(std::string_view what = "bool") {
        const auto v = get_u8(what);
        if (v > 1) fail("field '", what, "' at offset ", m_pos - 1, " is not a boolean (", int(v), ")");
        return v == 1;
    }
    std::uint32_t get_u32(std::string_view what = "u32") { return get_le<std::uint32_t>(what); }
    std::uint64_t get_u64(std::string_view what = "u64") { return get_le<std::uint64_t>(what); }
    std::int32_t get_i32(std::string_view what = "i32") {
        return static_cast<std::int32_t>(get_le<std::uint32_t>(what));
    }
    std::int64_t get_i64(std::string_view what = "i64") {
        return static_cast<std::int64_t>(get_le<std::uint64_t>(what));
    }
    float get_f32(std::string_view what = "f32") { return std::bit_cast<float>(get_le<std::uint32_t>(what)); }
    double get_f64(std::string_view what = "f64") { return std::bit_cast<double>(get_le<std::uint64_t>(what)); }

    std::string get_string(std::string_view what = "string") {
        const auto n = get_length(what, 1);
        std::string s(m_data.substr(m_pos, n));
        m_pos += n;
        return s;
    }
    /// A view into the underlying data (valid as long as that data); avoids a copy of big blobs.
    std::string_view get_string_view(std::string_view what = "string") {
        const auto n = get_length(what, 1);
        const auto s = m_data.substr(m_pos, n);
        m_pos += n;
        return s;
    }
    std::vector<float> get_f32_vector(std::string_view what = "f32 vector") { return get_vector<float>(what); }
    std::vector<double> get_f64_vector(std::string_view what = "f64 vector") { return get_vector<double>(what); }
    /// The same, for fields that must be finite (model weights, scales): a NaN or infinity is a
    /// corrupt file whose checksum was recomputed, reported here instead of predicted with.
    double get_finite_f64(std::string_view what) { return finite(get_f64(what), what); }
    std::vector<float> get_finite_f32_vector(std::string_view what) { return finite(get_f32_vector(what), what); }
    std::vector<double> get_finite_f64_vector(std::string_view what) { return finite(get_f64_vector(what), what); }
    std::vector<std::int64_t> get_i64_vector(std::string_view what = "i64 vector") {
        return get_vector<std::int64_t>(what);
    }
    std::vector<std::uint32_t> get_u32_vector(std::string_view what = "u32 vector") {
        return get_vector<std::uint32_t>(what);
    }
    std::vector<std::string> get_string_vector(std::string_view what = "string vector") {
        // every string costs at least its 8-byte length prefix
        const auto n = get_length(what, 8);
        std::vector<std::string> v;
        v.reserve(n);
        for (std::size_t i = 0; i < n; ++i) v.push_back(get_string(what));
        return v;
    }
    template <class T>
    requires std::is_arithmetic_v<T> std::vector<T> get_vector(std::string_view what) {
        const auto n = get_length(what, scalar_size<T>());
        std::vector<T> v(n);
        for (auto& x : v) x = get_scalar<T>(what);
        return v;
    }

    std::size_t position() const { return m_pos; }
    std::size_t remaining() const { return m_data.size() - m_pos; }
    bool at_end() const { return m_pos == m_data.size(); }
    const std::string& source() const { return m_source; }
    /// Throws unless every byte was consumed (catches a payload written by a different layout).
    void expect_end(std::string_view what = "payload") const {
        if (!at_end()) fail(remaining(), " unexpected trailing bytes after ", what, " (offset ", m_pos, ")");
    }
    /// Throw parse_error "<source>: <message>".
    template <class... Args>
    [[noreturn]] void fail(Args&&... args) const {
        raise<parse_error>(m_source, ": ", std::forward<Args>(args)...);
    }

private:
    template <class T>
    static constexpr std::size_t scalar_size() {
        return std::is_same_v<T, bool> ? 1 : sizeof(T);
    }
    template <class T>
    T get_scalar(std::string_view what) {
        if constexpr (std::is_same_v<T, bool>)
            return get_bool(what);
        else if constexpr (std::is_floating_point_v<T>) {
            if constexpr (sizeof(T) == 4)
                return get_f32(what);
            else
                return get_f64(what);
        } else if constexpr (sizeof(T) == 1)
            return static_cast<T>(get_u8(what));
        else
            return static_cast<T>(get_le<std::make_unsigned_t<T>>(what));
    }
    template <class F>
    F finite(F v, std::string_view what) const {
        if constexpr (std::is_floating_point_v<F>) {
            if (!std::isfinite(v))
                fail("field '", what, "' before offset ", m_pos, " is not a finite number (", v, ")");
        } else {
            for (std::size_t i = 0; i < v.size(); ++i)
                if (!std::isfinite(v[i]))
                    fail("field '", what, "' element ", i, " before offset ", m_pos, " is not a finite number (", v[i],
                         ")");
        }
        return v;
    }
    void need(std::size_t n, std::string_view what) const {
        if (n > remaining())
            fail("truncated: '", what, "' needs ", n, " bytes at offset ", m_pos, ", only ", remaining(), " left");
    }
    /// A u64 element count, checked against the bytes left before anything is allocated.
    std::size_t get_length(std::string_view what, std::size_t element_bytes) {
        const auto n = get_u64(what);
        if (element_bytes > 0 && n > remaining() / element_bytes)
            fail("truncated: '", what, "' declares ", n, " elements (", element_bytes, " bytes each) at offset ", m_pos,
                 ", only ", remaining(), " bytes left");
        return static_cast<std::size_t>(n);
    }
    template <class U>
    U get_le(std::string_view what) {
        need(sizeof(U), what);
        U v = 0;
        for (std::size_t i = 0; i < sizeof(U); ++i)
            v |= static_cast<U>(static_cast<U>(static_cast<unsigned char>(m_data[m_pos + i])) << (8 * i));
        m_pos += sizeof(U);
        return v;
    }

    std::string_view m_data;
    std::size_t m_pos = 0;
    std::string m_source;
};

/// Key-value metadata of a container, in the order written (keys unique and non-empty).
using Metadata = std::vector<std::pair<std::string, std::string>>;

/// At most this many metadata entries (a guard against corrupt counts).
inline constexpr std::uint32_t max_metadata_entries = 1024;

/// What is wrong with `m` (too many entries, an empty or a repeated key), or "" when nothing is.
DNNCOST_FUNC std::string metadata_problem(const Metadata& m);

/// What read_container returns: the header fields and the (verified) payload.
struct Container {
    std::uint32_t version = container_format_version;
    std::string kind;
    std::uint64_t config_hash = 0;
    std::string payload;
    Metadata metadata;
    /// The value of metadata `key`, if present.
    std::optional<std::string> meta(std::string_view key) const {
        for (const auto& [k, v] : metadata)
            if (k == key) return v;
        return std::nullopt;
    }
};

/// Wrap a payload into a container (magic, version, kind, config hash, payload, metadata, CRC-32).
/// @throws config_error on an empty or repeated metadata key, or too many entries
DNNCOST_FUNC std::string write_container(std::string_view kind, std::uint64_t config_hash, std::string_view payload,
                                         const Metadata& metadata = {});

/// True if `bytes` start with the container magic (a cheap "is this a model file?" test).
inline bool looks_like_container(std::string_view bytes) {
    return bytes.size() >= container_magic.size() &&
           std::memcmp(bytes.data(), container_magic.data(), container_magic.size()) == 0;
}

/// Verify and unpack a container.
/// @param bytes          the whole file content
/// @param expected_kind  if given, the kind the caller can decode; another kind is rejected
/// @param source_name    the file name used in error messages
/// @throws parse_error on wrong magic, a newer format version, truncation, a checksum mismatch,
///         trailing bytes or an unexpected kind; every message starts with source_name.
DNNCOST_FUNC Container read_container(std::string_view bytes,
                                      std::optional<std::string_view> expected_kind = std::nullopt,
                                      std::string_view source_name = "<memory>");

/// The same model with its metadata replaced (the payload is not touched; the CRC is recomputed).
/// @throws parse_error as read_container for `bytes` that are not a valid container
DNNCOST_FUNC std::string with_metadata(std::string_view bytes, const Metadata& metadata,
                                       std::string_view source_name = "<memory>");

}  // namespace dnncost::io

#if !defined(DNNCOST_COMPILED)
#include <dnncost/io/serialize_impl.hpp>
#endif
