// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/SafetensorsFile.h"

#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kvscope::model {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; kvscope maps it without byte swapping");

/// The read-only mapping of one file; private copy-on-write so that a stray in-place write can never
/// reach the file.
class SafetensorsFile::Mapping {
public:
    explicit Mapping(const std::filesystem::path& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            throw ModelError("cannot open safetensors file `" + path.string() + "`: " + std::strerror(errno));
        }
        struct stat info {};
        if (::fstat(fd, &info) != 0) {
            const int error = errno;
            ::close(fd);
            throw ModelError("cannot stat safetensors file `" + path.string() + "`: " + std::strerror(error));
        }
        m_size = static_cast<uint64_t>(info.st_size);
        if (m_size > 0) {
            void* data = ::mmap(nullptr, m_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
            if (data == MAP_FAILED) {
                const int error = errno;
                ::close(fd);
                throw ModelError("cannot memory-map safetensors file `" + path.string() + "`: " + std::strerror(error));
            }
            m_data = static_cast<uint8_t*>(data);
        }
        ::close(fd);
    }
    ~Mapping() {
        if (m_data != nullptr) {
            ::munmap(m_data, m_size);
        }
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;

    uint8_t* data() const { return m_data; }
    uint64_t size() const { return m_size; }

private:
    uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
};

namespace {

struct DtypeInfo {
    at::ScalarType type;
    uint64_t bytes;
};

bool dtypeInfo(const std::string& name, DtypeInfo& info) {
    if (name == "F32") {
        info = {at::kFloat, 4};
    } else if (name == "F16") {
        info = {at::kHalf, 2};
    } else if (name == "BF16") {
        info = {at::kBFloat16, 2};
    } else {
        return false;
    }
    return true;
}

} // namespace

const char* SafetensorsFile::allowedDtypes() { return "F32, F16, BF16"; }

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : m_path(path), m_mapping(std::make_shared<Mapping>(path)) {
    const std::string where = "safetensors file `" + path.string() + "`";
    const uint64_t size = m_mapping->size();
    if (size < 8) {
        throw ModelError(where + " is too short (" + std::to_string(size) + " bytes) to hold a header length");
    }
    uint64_t headerLength = 0;
    std::memcpy(&headerLength, m_mapping->data(), 8);
    if (headerLength > size - 8) {
        throw ModelError(where + " declares a " + std::to_string(headerLength) + "-byte header but holds only " +
                         std::to_string(size - 8) + " bytes after the length");
    }
    m_dataStart = 8 + headerLength;
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(m_mapping->data() + 8, m_mapping->data() + m_dataStart);
    } catch (const nlohmann::json::exception& error) {
        throw ModelError(where + " has a header that is not valid JSON: " + error.what());
    }
    if (!header.is_object()) {
        throw ModelError(where + " has a header that is not a JSON object");
    }
    const uint64_t dataSize = size - m_dataStart;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            if (value.is_object()) {
                for (const auto& [key, text] : value.items()) {
                    if (text.is_string()) {
                        m_metadata[key] = text.get<std::string>();
                    }
                }
            }
            continue;
        }
        const std::string what = where + ", tensor `" + name + "`";
        Entry entry;
        try {
            entry.dtype = value.at("dtype").get<std::string>();
            entry.shape = value.at("shape").get<std::vector<int64_t>>();
            const auto offsets = value.at("data_offsets").get<std::vector<uint64_t>>();
            if (offsets.size() != 2) {
                throw ModelError(what + ": `data_offsets` must hold [begin, end]");
            }
            entry.begin = offsets[0];
            entry.end = offsets[1];
        } catch (const nlohmann::json::exception& error) {
            throw ModelError(what + ": header entry needs `dtype` (string), `shape` (list of integers) and "
                                    "`data_offsets` ([begin, end]): " +
                             error.what());
        }
        DtypeInfo info{};
        if (!dtypeInfo(entry.dtype, info)) {
            throw ModelError(what + " has dtype " + entry.dtype + " (allowed: " + allowedDtypes() + ")");
        }
        uint64_t elements = 1;
        for (int64_t dim : entry.shape) {
            if (dim < 0) {
                throw ModelError(what + " has a negative dimension");
            }
            elements *= static_cast<uint64_t>(dim);
        }
        if (entry.end < entry.begin || entry.end > dataSize) {
            throw ModelError(what + " has data offsets [" + std::to_string(entry.begin) + ", " +
                             std::to_string(entry.end) + "] outside the " + std::to_string(dataSize) +
                             "-byte data section (truncated file?)");
        }
        if (entry.end - entry.begin != elements * info.bytes) {
            throw ModelError(what + " spans " + std::to_string(entry.end - entry.begin) + " bytes but its shape and dtype need " +
                             std::to_string(elements * info.bytes));
        }
        m_entries.emplace(name, std::move(entry));
    }
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : m_entries) {
        names.push_back(name);
    }
    return names;
}

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
    auto it = m_entries.find(name);
    if (it == m_entries.end()) {
        throw ModelError("safetensors file `" + m_path.string() + "` has no tensor `" + name + "`");
    }
    return it->second;
}

const std::string& SafetensorsFile::dtypeName(const std::string& name) const { return entry(name).dtype; }

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
    const Entry& found = entry(name);
    DtypeInfo info{};
    dtypeInfo(found.dtype, info);
    uint8_t* data = m_mapping->data() + m_dataStart + found.begin;
    const auto options = at::TensorOptions().dtype(info.type);
    if (reinterpret_cast<uintptr_t>(data) % info.bytes != 0) {
        // The format does not promise aligned data; copy rather than hand kernels a misaligned view.
        at::Tensor copy = at::empty(found.shape, options);
        std::memcpy(copy.data_ptr(), data, found.end - found.begin);
        return copy;
    }
    std::shared_ptr<Mapping> keepAlive = m_mapping;
    return at::from_blob(
        data, found.shape, [keepAlive](void*) mutable { keepAlive.reset(); }, options);
}

} // namespace kvscope::model
