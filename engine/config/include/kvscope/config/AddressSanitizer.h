// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

/// KVSCOPE_ASAN is defined in a build with AddressSanitizer (GCC's __SANITIZE_ADDRESS__, Clang's feature test): code
/// that hands out memory or loads libraries its own way stands aside there for the sanitizer.
#if defined(__SANITIZE_ADDRESS__)
#define KVSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVSCOPE_ASAN 1
#endif
#endif
