// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>
#include <map>
#include <string>

namespace kvscope::press {

/// What a press decided on one pass of one layer; nothing defined: it left the layer alone.
struct PressAction {
    /// Kept slots [B, Hkv, n] per head, in the order the cache keeps them: an eviction.
    at::Tensor kept;
    /// Scores [B, Hkv, L] of every slot the press ranked, for the event log (undefined: none computed).
    at::Tensor scores;
    /// [B, Hkv, L] true where a head masks a slot from later queries; the cache keeps every slot (AdaKV).
    at::Tensor masked;
    /// New keys [B, Hkv, n, D] of the kept slots (KeyRerotation re-rotates them); undefined: unchanged.
    at::Tensor keys;
    /// With `keys`: how many positions each kept key's rotary embedding moved [B, Hkv, n] (KeyRerotation: j -
    /// p_j for the key of slot p_j now at j), in kept's order; undefined: the kept keys keep their rotations.
    at::Tensor rotationShift;
    /// Intermediate results by the name kvpress_ref's fixtures give them (`chunk_scores`, `vwl1norm`), for
    /// `kvscope-cli conform`; a generation ignores them.
    std::map<std::string, at::Tensor> details;

    bool acted() const { return kept.defined() || masked.defined() || keys.defined(); }
};

} // namespace kvscope::press
