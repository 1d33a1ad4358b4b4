// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace kvscope::cache {

/// Whether a cache offloads its layers to host memory between their updates, and which (the
/// reference's `offloading` and `offload_only_non_sliding`): sliding layers are small, so by default
/// only the others move.
enum class Offloading {
    Off,
    AllLayers,
    OnlyNonSliding,
};

} // namespace kvscope::cache
