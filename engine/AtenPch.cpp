// SPDX-License-Identifier: GPL-3.0-or-later
// Compiles the precompiled <ATen/ATen.h> the LibTorch targets reuse (engine/CMakeLists.txt, kvscope_aten_pch);
// it has nothing of its own.
