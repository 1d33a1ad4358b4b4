// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for a server's /metrics page (kvscope --attach --metrics: HTTP from the network, untrusted):
// any bytes give a finite sum or none, for any name; nothing may crash, hang or read out of bounds.
#include "kvscope/attach/PrometheusText.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view page(reinterpret_cast<const char*>(data), size);
    // The first line names the metric asked for, so that the fuzzer explores names as well as pages.
    const std::size_t newline = page.find('\n');
    const std::string_view name = newline == std::string_view::npos ? std::string_view("vllm:prefix_cache_hits_total")
                                                                    : page.substr(0, newline);
    for (const std::string_view asked : {name, std::string_view("vllm:prefix_cache_queries_total")}) {
        if (const auto sum = kvscope::attach::PrometheusText::counter(page, asked); sum && std::isnan(*sum)) {
            __builtin_trap();
        }
    }
    return 0;
}
