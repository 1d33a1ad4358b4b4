// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/SafetensorsFile.h"

#include "kvscope/model/ModelError.h"
#include "kvscope/model/SafetensorsHeader.h"

#include <ATen/ATen.h>

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

at::ScalarType scalarType(const std::string& dtype) {
    if (dtype == "F32") {
        return at::kFloat;
    }
    return dtype == "F16" ? at::kHalf : at::kBFloat16; // SafetensorsHeader accepts these three only
}

} // namespace

const char* SafetensorsFile::allowedDtypes() { return SafetensorsHeader::allowedDtypes(); }

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : m_path(path), m_mapping(std::make_shared<Mapping>(path)) {
    SafetensorsHeader header = SafetensorsHeader::parse({m_mapping->data(), m_mapping->size()},
                                                        "safetensors file `" + path.string() + "`");
    m_dataStart = header.dataStart();
    m_entries = header.entries();
    m_metadata = header.metadata();
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
    uint8_t* data = m_mapping->data() + m_dataStart + found.begin;
    const auto options = at::TensorOptions().dtype(scalarType(found.dtype));
    if (reinterpret_cast<uintptr_t>(data) % SafetensorsHeader::dtypeBytes(found.dtype) != 0) {
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
