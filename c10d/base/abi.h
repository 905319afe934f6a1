// How c10d's names appear in the binary: the versioned namespace and what the library exports.
//
// Namespace. Everything is declared in c10d::v1, an inline namespace: sources and users write
// c10d::ProcessGroup, while the mangled names say c10d::v1::ProcessGroup. libtorch defines
// c10d::ProcessGroup, c10d::Work, c10d::Store, ... with other layouts; with the inline namespace
// no symbol of libc10d has the name of one of libtorch's, so a program may link both
// (integrations/torch/tests/link_both.cc). Each file wraps its declarations as
//
//   namespace c10d {
//   C10D_NAMESPACE_BEGIN
//   ...
//   C10D_NAMESPACE_END
//   }  // namespace c10d
//
// A translation unit that includes torch's own c10d headers as well as ours cannot say
// c10d::ProcessGroup for either (both are members of namespace c10d, so the name is ambiguous).
// Such a file defines C10D_NO_INLINE_NAMESPACE before including any c10d header: v1 is then an
// ordinary namespace, torch's types keep their names (c10d::ProcessGroup) and ours are
// c10d::v1::ProcessGroup. The mangled names are the same either way, so such a file links with
// the library and with files that use the inline form (docs/api.md, "Beside libtorch").
//
// What libc10d exports of all this: cmake/C10dExports.cmake.
#pragma once

#ifdef C10D_NO_INLINE_NAMESPACE
#define C10D_NAMESPACE_BEGIN namespace v1 {
#else
#define C10D_NAMESPACE_BEGIN inline namespace v1 {
#endif
#define C10D_NAMESPACE_END }  // namespace v1
