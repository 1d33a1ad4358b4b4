// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/PressInputs.h"
#include "kvscope/press/PressReads.h"
#include "kvscope/press/PressSelection.h"

#include <map>
#include <string>

namespace kvscope::press {

/// A scorer press (kvpress's ScorerPress): scores every cached token of a layer, then keeps the
/// `keptCount` best per KV head. Subclasses compute the scores only.
class Press {
public:
    virtual ~Press() = default;
    /// The catalogue name (`snapkv`).
    virtual std::string name() const = 0;
    /// kvpress's class name (`SnapKVPress`).
    virtual std::string referenceName() const = 0;
    /// The press as its users write it, in messages: the class name without `Press` (`SnapKV`).
    std::string displayName() const;
    virtual PressReads reads() const = 0;
    /// Scores [B, Hkv, T] (higher is kept). `keptCount` is the budget the scores are for (StreamingLLM).
    virtual at::Tensor score(const PressInputs& inputs, int64_t keptCount) const = 0;
    /// Tokens kept of `length` at `ratio`: kvpress's `int(T * (1 - ratio))`.
    virtual int64_t keptCount(int64_t length, double ratio, const PressInputs& inputs) const;
    /// Scores and selects at `ratio` (0 <= ratio < 1). At ratio 0 kvpress keeps the cache unchanged and
    /// computes no scores: the selection then keeps every slot in order and has no scores.
    PressSelection select(const PressInputs& inputs, double ratio) const;
    /// The scores `select` ranks at `ratio`: score() unless the press reads the ratio itself (Compactor's
    /// blending defaults to it).
    virtual at::Tensor scoreAt(const PressInputs& inputs, int64_t keptCount, double ratio) const;
    /// Intermediate results by the name kvpress_ref's fixtures give them (LagKV's `lag_scores`), for
    /// `kvscope-cli conform`; none by default. A generation never asks.
    virtual std::map<std::string, at::Tensor> details(const PressInputs& inputs) const;

protected:
    /// Queries [B, H, rows, D] before RoPE of the last `rows` hidden rows (q = hidden q_proj^T).
    static at::Tensor queries(const PressInputs& inputs, int64_t rows);
    /// Keys [B, Hkv, rows, D] before RoPE of `rows` hidden rows from `first` (k = hidden k_proj^T, then
    /// k_norm), kvpress's get_prerope_key_states.
    static at::Tensor keysBeforeRotation(const PressInputs& inputs, int64_t first, int64_t rows);
    /// `keys` [B, Hkv, T, D] repeated for the G query heads of each KV head: [B, H, T, D] (repeat_kv).
    static at::Tensor repeatKv(const at::Tensor& keys, int64_t numHeads);
    /// (x - mean) / max(std, 1e-6) over the whole tensor, unbiased std: kvpress's "head-wise z-norm".
    static at::Tensor zNormalized(const at::Tensor& scores);
    /// [B, H, ...] -> [B, Hkv, ...]: the mean over each KV head's query heads.
    static at::Tensor groupMean(const at::Tensor& perHead, int64_t numKeyValueHeads);
    /// `scores` with `count` pads (the global max + 1, kvpress's forced keep) before or after the tokens.
    static at::Tensor withPads(const at::Tensor& scores, int64_t count, bool before);
    /// Refuses inputs the press needs but did not get, naming them.
    static void require(const at::Tensor& tensor, const char* what, const std::string& press);
    /// Refuses a pass that is not the prefill: presses that score every cached token by its own query need
    /// as many hidden rows (and rotary rows, where given) as cached tokens (kvpress asserts it).
    void requirePrefillRows(const PressInputs& inputs) const;
    /// Refuses an option that must stay below the `length` cached tokens the press was given, in the
    /// user's terms and with the fix (config::PressDescriptions::promptTooShort).
    [[noreturn]] void refuseLongerThanPrompt(const std::string& option, int64_t value, int64_t length) const;
};

} // namespace kvscope::press
