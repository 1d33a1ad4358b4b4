// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "OffloadScheduler.h"

namespace kvscope::cache {

/// The scheduler of a cache that does not offload: every layer stays where it is and updates run as
/// called.
class NoOffloadScheduler : public OffloadScheduler {
public:
    void bringIn(std::size_t) override {}
    KeyValueStates compute(std::size_t, const std::function<KeyValueStates()>& update) override { return update(); }
    TakeOut takeOut(std::size_t) override { return TakeOut::Stayed; }
    void drain() override {}
};

} // namespace kvscope::cache
