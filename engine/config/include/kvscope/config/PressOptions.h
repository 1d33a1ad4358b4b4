// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressOption.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvscope::config {

/// The `key=value` options given to one press, checked against the press's declared options: unknown
/// keys and values of the wrong type or range are refused naming what is allowed.
class PressOptions {
public:
    PressOptions(std::string press, std::vector<PressOption> declared, std::map<std::string, std::string> given);
    int64_t integer(const std::string& name, int64_t minimum) const;
    double real(const std::string& name, double minimum, double maximum) const;
    bool flag(const std::string& name) const;
    std::string text(const std::string& name) const;

private:
    const PressOption& declared(const std::string& name) const;
    std::string valueOf(const std::string& name) const;

    std::string m_press;
    std::vector<PressOption> m_declared;
    std::map<std::string, std::string> m_given;
};

} // namespace kvscope::config
