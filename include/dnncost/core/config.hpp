#pragma once
/// @file config.hpp
/// Header-only or compiled mode.
///
/// Header-only (the default, target dnncost::dnncost): every function is defined in the headers.
/// Compiled (target dnncost::compiled, which defines DNNCOST_COMPILED): the heavy non-template
/// parts — the ONNX importer and exporter, the estimator registry with its built-in presets, the
/// device model's pricing and the GNN presets' instantiations — are built once into a library,
/// and a program's own translation units see their declarations only.
///
/// - DNNCOST_HEADER_ONLY is 1 where this translation unit compiles those definitions: in
///   header-only mode, and in the library's own sources (DNNCOST_BUILDING_LIBRARY).
/// - DNNCOST_FUNC marks a function of the compiled parts: inline in header-only mode, an ordinary
///   external function in compiled mode.
#if defined(DNNCOST_COMPILED) && !defined(DNNCOST_BUILDING_LIBRARY)
#define DNNCOST_HEADER_ONLY 0
#else
#define DNNCOST_HEADER_ONLY 1
#endif

#if defined(DNNCOST_COMPILED)
#define DNNCOST_FUNC
#else
#define DNNCOST_FUNC inline
#endif
