#pragma once
/// @file serialize_impl.hpp
/// The definitions of serialize.hpp's container functions: compiled once into dnncost::compiled
/// (src/io.cpp), or included by serialize.hpp in header-only mode.
#include <cstring>
#include <ios>
#include <optional>
#include <string>
#include <string_view>

#include <dnncost/core/error.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::io {

DNNCOST_FUNC std::string metadata_problem(const Metadata& m) {
    if (m.size() > max_metadata_entries)
        return std::to_string(m.size()) + " entries (at most " + std::to_string(max_metadata_entries) + ")";
    for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i].first.empty()) return "empty key";
        for (std::size_t j = 0; j < i; ++j)
            if (m[j].first == m[i].first) return "key '" + m[i].first + "' given twice";
    }
    return {};
}

DNNCOST_FUNC std::string write_container(std::string_view kind, std::uint64_t config_hash, std::string_view payload,
                                         const Metadata& metadata) {
    if (const auto problem = metadata_problem(metadata); !problem.empty())
        raise<config_error>("write_container: metadata: ", problem);
    BinaryWriter w;
    for (char c : container_magic) w.put_u8(static_cast<std::uint8_t>(c));
    w.put_u32(container_format_version);
    w.put_u32(static_cast<std::uint32_t>(kind.size()));
    std::string bytes = std::move(w).take();
    bytes.append(kind);
    BinaryWriter rest;
    rest.put_u64(config_hash);
    rest.put_string(payload);
    rest.put_u32(static_cast<std::uint32_t>(metadata.size()));
    for (const auto& [k, v] : metadata) {
        rest.put_string(k);
        rest.put_string(v);
    }
    bytes += rest.bytes();
    BinaryWriter crc;
    crc.put_u32(crc32(bytes));
    bytes += crc.bytes();
    return bytes;
}

DNNCOST_FUNC Container read_container(std::string_view bytes, std::optional<std::string_view> expected_kind,
                                      std::string_view source_name) {
    const std::string source(source_name);
    if (!looks_like_container(bytes)) {
        if (bytes.size() < container_magic.size() &&
            std::memcmp(bytes.data(), container_magic.data(), bytes.size()) == 0)
            raise<parse_error>(source, ": truncated: file is ", bytes.size(),
                               " bytes, shorter than the dnncost header");
        raise<parse_error>(source, ": not a dnncost model file (wrong magic number)");
    }
    // A damaged length field sends the walk below past the end of the file, so that a flipped
    // bit reads as a truncation. When the walk runs out of bytes and the last four are not the
    // checksum of the rest, the file may be cut short or corrupt, and the message says both.
    const auto damaged = [&] {
        if (bytes.size() < 4) return true;
        BinaryReader tail(bytes.substr(bytes.size() - 4), source);
        return tail.get_u32("checksum") != crc32(bytes.substr(0, bytes.size() - 4));
    };
    Container c;
    std::string_view payload;
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    try {
#else
    (void)damaged;  // without exceptions the first error aborts with its own message
    {
#endif
        BinaryReader r(bytes, source);
        for (std::size_t i = 0; i < container_magic.size(); ++i) r.get_u8("magic");
        c.version = r.get_u32("format version");
        if (c.version == 0 || c.version > container_format_version)
            raise<parse_error>(source, ": model format version ", c.version, " is newer than this dnncost supports (",
                               container_format_version, "); upgrade dnncost to read it");
        const auto kind_size = r.get_u32("kind length");
        if (kind_size > r.remaining())
            raise<parse_error>(source, ": truncated: 'kind' needs ", kind_size, " bytes, only ", r.remaining(),
                               " left");
        if (kind_size > 256) raise<parse_error>(source, ": corrupt header: kind length ", kind_size, " is implausible");
        c.kind.assign(bytes.substr(r.position(), kind_size));
        for (std::uint32_t i = 0; i < kind_size; ++i) r.get_u8("kind");
        c.config_hash = r.get_u64("config hash");
        payload = r.get_string_view("payload");
        if (c.version >= 2) {
            const auto n = r.get_u32("metadata count");
            if (n > max_metadata_entries)
                raise<parse_error>(source, ": corrupt metadata: ", n, " entries (at most ", max_metadata_entries, ")");
            for (std::uint32_t i = 0; i < n; ++i) {
                auto key = r.get_string("metadata key");
                auto value = r.get_string("metadata value");
                c.metadata.emplace_back(std::move(key), std::move(value));
            }
        }
        const auto checked = r.position();
        const auto stored_crc = r.get_u32("checksum");
        if (!r.at_end())
            raise<parse_error>(source, ": ", r.remaining(),
                               " unexpected bytes after the checksum (concatenated or corrupt file?)");
        const auto actual_crc = crc32(bytes.substr(0, checked));
        if (actual_crc != stored_crc)
            raise<parse_error>(source, ": checksum mismatch (stored 0x", std::hex, stored_crc, ", computed 0x",
                               actual_crc, "): the file is corrupt");
    }
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    catch (const parse_error& e) {
        std::string_view detail = e.what();
        if (detail.starts_with(source + ": ")) detail.remove_prefix(source.size() + 2);
        if (!detail.starts_with("truncated") || !damaged()) throw;
        raise<parse_error>(source, ": corrupt or truncated file (the checksum does not match): ", detail);
    }
#endif
    if (expected_kind && c.kind != *expected_kind)
        raise<parse_error>(source, ": holds a '", c.kind, "' model, expected '", *expected_kind, "'");
    c.payload.assign(payload);
    if (const auto problem = metadata_problem(c.metadata); !problem.empty())
        raise<parse_error>(source, ": corrupt metadata: ", problem);
    return c;
}

DNNCOST_FUNC std::string with_metadata(std::string_view bytes, const Metadata& metadata,
                                       std::string_view source_name) {
    const auto c = read_container(bytes, std::nullopt, source_name);
    return write_container(c.kind, c.config_hash, c.payload, metadata);
}

}  // namespace dnncost::io
