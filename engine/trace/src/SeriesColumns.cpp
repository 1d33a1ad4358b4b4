// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SeriesColumns.h"

#include <algorithm>
#include <limits>

namespace kvscope::trace {

namespace {

std::int64_t tokenValue(const LayerState& layer, std::size_t field) {
    switch (field) {
    case 0:
        return layer.seqLength;
    case 1:
        return layer.storedTokens;
    case 2:
        return layer.kvLength;
    case 3:
        return layer.residualTokens;
    default:
        return layer.quantizedTokens;
    }
}

} // namespace

std::optional<std::size_t> SeriesColumns::tokenIndex(SeriesField field) {
    switch (field) {
    case SeriesField::SeqLength:
        return 0;
    case SeriesField::StoredTokens:
        return 1;
    case SeriesField::KvLength:
        return 2;
    case SeriesField::ResidualTokens:
        return 3;
    case SeriesField::QuantizedTokens:
        return 4;
    default:
        return std::nullopt;
    }
}

void SeriesColumns::record(const StepState& state) {
    m_cacheWide[0].push_back(state.memoryDeviceFullPrecision);
    m_cacheWide[1].push_back(state.memoryDeviceQuantized);
    m_cacheWide[2].push_back(state.memoryHost);
    m_cacheWide[3].push_back(state.wallNs);
    const auto steps = static_cast<std::size_t>(m_steps);
    for (std::size_t field = 0; field < kTokenFields; ++field) {
        auto& columns = m_tokens[field];
        if (columns.size() < state.layers.size()) {
            columns.resize(state.layers.size());
        }
        for (std::size_t layer = 0; layer < columns.size(); ++layer) {
            const std::int64_t value =
                layer < state.layers.size() ? tokenValue(state.layers[layer], field) : 0;
            std::vector<std::int32_t>& column = columns[layer];
            if (column.empty() && value == 0) {
                continue;
            }
            if (value < std::numeric_limits<std::int32_t>::min() ||
                value > std::numeric_limits<std::int32_t>::max()) {
                m_tokensExact = false;
            }
            if (column.empty()) {
                column.reserve(steps + 1024);
                column.resize(steps, 0);
            }
            column.push_back(static_cast<std::int32_t>(value));
        }
    }
    ++m_steps;
}

void SeriesColumns::append(std::size_t count, const std::array<std::vector<std::int64_t>, 4>& cacheWide,
                           const std::array<std::vector<std::vector<std::int32_t>>, 5>& tokens) {
    const auto steps = static_cast<std::size_t>(m_steps);
    for (std::size_t column = 0; column < cacheWide.size(); ++column) {
        m_cacheWide[column].insert(m_cacheWide[column].end(), cacheWide[column].begin(), cacheWide[column].end());
    }
    const std::vector<std::int32_t> none;
    for (std::size_t field = 0; field < kTokenFields; ++field) {
        auto& columns = m_tokens[field];
        if (columns.size() < tokens[field].size()) {
            columns.resize(tokens[field].size());
        }
        for (std::size_t layer = 0; layer < columns.size(); ++layer) {
            const std::vector<std::int32_t>& values = layer < tokens[field].size() ? tokens[field][layer] : none;
            std::vector<std::int32_t>& column = columns[layer];
            // As record(): a column begins at its layer's first non-zero value, the zeros before it implied.
            const auto firstNonZero = std::find_if(values.begin(), values.end(), [](std::int32_t v) { return v != 0; });
            if (column.empty() && firstNonZero == values.end()) {
                continue;
            }
            if (column.empty()) {
                column.resize(steps, 0);
            }
            if (values.empty()) {
                column.resize(column.size() + count, 0);
            } else {
                column.insert(column.end(), values.begin(), values.end());
            }
        }
    }
    m_steps += static_cast<std::int64_t>(count);
}

std::optional<std::vector<double>> SeriesColumns::values(std::int32_t layer, SeriesField field,
                                                         std::int64_t fromStep, std::int64_t toStep) const {
    if (fromStep < 0 || toStep >= m_steps || fromStep > toStep) {
        return std::nullopt;
    }
    const auto from = static_cast<std::size_t>(fromStep);
    const auto count = static_cast<std::size_t>(toStep - fromStep + 1);
    const auto cacheWide = [&](std::size_t column) {
        std::vector<double> values(count);
        for (std::size_t i = 0; i < count; ++i) {
            values[i] = static_cast<double>(m_cacheWide[column][from + i]);
        }
        return values;
    };
    const bool memory = field == SeriesField::BytesDeviceFullPrecision ||
                        field == SeriesField::BytesDeviceQuantized || field == SeriesField::BytesHost;
    if (field == SeriesField::WallNs) {
        return cacheWide(3);
    }
    if (memory && layer == -1) {
        return cacheWide(field == SeriesField::BytesDeviceFullPrecision ? 0
                         : field == SeriesField::BytesDeviceQuantized   ? 1
                                                                        : 2);
    }
    const auto index = tokenIndex(field);
    if (!index || !m_tokensExact) {
        return std::nullopt;
    }
    const auto& columns = m_tokens[*index];
    std::vector<double> values(count, 0.0);
    const auto add = [&](const std::vector<std::int32_t>& column) {
        // A column holds every step from the layer's first non-zero value on; before that, zeros.
        for (std::size_t i = 0; i < count; ++i) {
            values[i] += column.empty() ? 0.0 : static_cast<double>(column[from + i]);
        }
    };
    if (layer >= 0) {
        if (static_cast<std::size_t>(layer) < columns.size()) {
            add(columns[static_cast<std::size_t>(layer)]);
        }
        return values;
    }
    for (const auto& column : columns) {
        add(column);
    }
    return values;
}

void SeriesColumns::shrinkToFit() {
    for (auto& column : m_cacheWide) {
        column.shrink_to_fit();
    }
    for (auto& columns : m_tokens) {
        for (auto& column : columns) {
            column.shrink_to_fit();
        }
    }
}

std::size_t SeriesColumns::memoryBytes() const {
    std::size_t bytes = sizeof(*this);
    for (const auto& column : m_cacheWide) {
        bytes += column.capacity() * sizeof(std::int64_t);
    }
    for (const auto& columns : m_tokens) {
        for (const auto& column : columns) {
            bytes += sizeof(column) + column.capacity() * sizeof(std::int32_t);
        }
    }
    return bytes;
}

} // namespace kvscope::trace
