// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/LayerState.h"

namespace kvscope::trace {

std::string_view toString(Residency residency) {
    switch (residency) {
    case Residency::Device:
        return "device";
    case Residency::Host:
        return "host";
    case Residency::InTransit:
        return "in_transit";
    }
    return "unknown";
}

} // namespace kvscope::trace
