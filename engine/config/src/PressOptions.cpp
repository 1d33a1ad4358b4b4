// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/PressOptions.h"

#include <algorithm>
#include <stdexcept>

namespace kvscope::config {

PressOptions::PressOptions(std::string press, std::vector<PressOption> declared,
                           std::map<std::string, std::string> given)
    : m_press(std::move(press)), m_declared(std::move(declared)), m_given(std::move(given)) {
    for (const auto& [key, value] : m_given) {
        const bool known = std::any_of(m_declared.begin(), m_declared.end(),
                                       [&](const PressOption& option) { return option.name == key; });
        if (!known) {
            std::string allowed;
            for (const PressOption& option : m_declared) {
                allowed += (allowed.empty() ? "" : ", ") + option.name;
            }
            throw std::invalid_argument("press " + m_press + " has no option `" + key + "` (allowed: " +
                                        (allowed.empty() ? "none" : allowed) + ")");
        }
    }
}

const PressOption& PressOptions::declared(const std::string& name) const {
    for (const PressOption& option : m_declared) {
        if (option.name == name) {
            return option;
        }
    }
    throw std::logic_error("press " + m_press + " reads an undeclared option " + name);
}

std::string PressOptions::valueOf(const std::string& name) const {
    const auto given = m_given.find(name);
    return given != m_given.end() ? given->second : declared(name).defaultValue;
}

int64_t PressOptions::integer(const std::string& name, int64_t minimum) const {
    const std::string text = valueOf(name);
    size_t used = 0;
    int64_t value = 0;
    try {
        value = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || value < minimum) {
        throw std::invalid_argument("press " + m_press + " option " + name + "=" + text + ": expected an integer >= " +
                                    std::to_string(minimum));
    }
    return value;
}

double PressOptions::real(const std::string& name, double minimum, double maximum) const {
    const std::string text = valueOf(name);
    size_t used = 0;
    double value = 0.0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !(value >= minimum && value <= maximum)) {
        throw std::invalid_argument("press " + m_press + " option " + name + "=" + text + ": expected a number in [" +
                                    std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
    }
    return value;
}

bool PressOptions::flag(const std::string& name) const {
    const std::string text = valueOf(name);
    if (text == "true" || text == "1") {
        return true;
    }
    if (text == "false" || text == "0") {
        return false;
    }
    throw std::invalid_argument("press " + m_press + " option " + name + "=" + text +
                                ": expected true or false (or 1, 0)");
}

std::string PressOptions::text(const std::string& name) const {
    return valueOf(name);
}

} // namespace kvscope::config
