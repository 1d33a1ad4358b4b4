// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/GgufFile.h"

#include "kvscope/gguf/GgufError.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kvscope::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF data is read without byte swapping");

/// The file's bytes: a read-only mapping, or a vector held in memory.
class GgufFile::Bytes {
public:
    explicit Bytes(std::vector<uint8_t> bytes) : m_owned(std::move(bytes)), m_data(m_owned.data()), m_size(m_owned.size()) {}
    explicit Bytes(const std::filesystem::path& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            throw GgufError("cannot open GGUF file `" + path.string() + "`: " + std::strerror(errno));
        }
        struct stat info {};
        if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
            ::close(fd);
            throw GgufError("GGUF file `" + path.string() + "` is not a regular file");
        }
        m_size = static_cast<uint64_t>(info.st_size);
        if (m_size > 0) {
            void* data = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (data == MAP_FAILED) {
                const int error = errno;
                ::close(fd);
                throw GgufError("cannot memory-map GGUF file `" + path.string() + "`: " + std::strerror(error));
            }
            m_mapped = data;
            m_data = static_cast<const uint8_t*>(data);
        }
        ::close(fd);
    }
    ~Bytes() {
        if (m_mapped != nullptr) {
            ::munmap(m_mapped, m_size);
        }
    }
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;

    const uint8_t* data() const { return m_data; }
    uint64_t size() const { return m_size; }

private:
    std::vector<uint8_t> m_owned;
    void* m_mapped = nullptr;
    const uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
};

namespace {

// Limits beyond which a file is refused as damaged rather than read (llama.cpp's own: GGML_MAX_DIMS, and
// names of at most 64 bytes; nesting is never used deeper than 1 by any converter).
constexpr uint32_t maxDims = 4;
constexpr uint64_t maxTensorName = 64;
constexpr int maxArrayDepth = 4;

/// Reads little-endian values from the bytes, refusing any read past their end.
class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size, const std::string& fileName)
        : m_data(data), m_size(size), m_fileName(fileName) {}

    uint64_t position() const { return m_position; }
    uint64_t remaining() const { return m_size - m_position; }

    [[noreturn]] void fail(const std::string& what) const {
        throw GgufError("GGUF file `" + m_fileName + "` is damaged: " + what + " (at byte " +
                        std::to_string(m_position) + " of " + std::to_string(m_size) + ")");
    }

    const uint8_t* take(uint64_t count, const char* what) {
        if (count > remaining()) {
            fail(std::string(what) + " needs " + std::to_string(count) + " bytes but the file ends after " +
                 std::to_string(remaining()));
        }
        const uint8_t* at = m_data + m_position;
        m_position += count;
        return at;
    }
    template <typename T>
    T read(const char* what) {
        T value;
        std::memcpy(&value, take(sizeof(T), what), sizeof(T));
        return value;
    }
    std::string string(const char* what, uint64_t maxLength = UINT64_MAX) {
        const uint64_t length = read<uint64_t>(what);
        if (length > maxLength) {
            fail(std::string(what) + " is " + std::to_string(length) + " bytes long; at most " +
                 std::to_string(maxLength) + " are allowed");
        }
        const uint8_t* bytes = take(length, what);
        return {reinterpret_cast<const char*>(bytes), static_cast<size_t>(length)};
    }

private:
    const uint8_t* m_data;
    uint64_t m_size;
    const std::string& m_fileName;
    uint64_t m_position = 0;
};

uint64_t minimumSize(GgufValueType type) {
    switch (type) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::String: return 8;
    case GgufValueType::Array: return 12;
    default: return 8;
    }
}

GgufValue readValue(Cursor& cursor, uint32_t typeId, int depth) {
    switch (static_cast<GgufValueType>(typeId)) {
    case GgufValueType::U8: return {GgufValueType::U8, uint64_t{cursor.read<uint8_t>("a UINT8")}};
    case GgufValueType::I8: return {GgufValueType::I8, int64_t{cursor.read<int8_t>("an INT8")}};
    case GgufValueType::U16: return {GgufValueType::U16, uint64_t{cursor.read<uint16_t>("a UINT16")}};
    case GgufValueType::I16: return {GgufValueType::I16, int64_t{cursor.read<int16_t>("an INT16")}};
    case GgufValueType::U32: return {GgufValueType::U32, uint64_t{cursor.read<uint32_t>("a UINT32")}};
    case GgufValueType::I32: return {GgufValueType::I32, int64_t{cursor.read<int32_t>("an INT32")}};
    case GgufValueType::U64: return {GgufValueType::U64, cursor.read<uint64_t>("a UINT64")};
    case GgufValueType::I64: return {GgufValueType::I64, cursor.read<int64_t>("an INT64")};
    case GgufValueType::F32: return {GgufValueType::F32, double{cursor.read<float>("a FLOAT32")}};
    case GgufValueType::F64: return {GgufValueType::F64, cursor.read<double>("a FLOAT64")};
    case GgufValueType::Bool: {
        const uint8_t value = cursor.read<uint8_t>("a BOOL");
        if (value > 1) {
            cursor.fail("a BOOL holds " + std::to_string(value) + "; only 0 and 1 are booleans");
        }
        return {GgufValueType::Bool, value == 1};
    }
    case GgufValueType::String: return {GgufValueType::String, cursor.string("a STRING")};
    case GgufValueType::Array: {
        if (depth >= maxArrayDepth) {
            cursor.fail("arrays nest deeper than " + std::to_string(maxArrayDepth));
        }
        const uint32_t elementType = cursor.read<uint32_t>("an ARRAY's element type");
        if (elementType > static_cast<uint32_t>(GgufValueType::F64)) {
            cursor.fail("an ARRAY has element type " + std::to_string(elementType) +
                        "; GGUF's value types are 0 to 12");
        }
        const uint64_t count = cursor.read<uint64_t>("an ARRAY's length");
        if (count > cursor.remaining() / minimumSize(static_cast<GgufValueType>(elementType))) {
            cursor.fail("an ARRAY of " + std::to_string(count) + " " + valueTypeName(elementType) +
                        " values cannot fit in the " + std::to_string(cursor.remaining()) + " bytes left");
        }
        GgufValue::Array elements;
        elements.reserve(static_cast<size_t>(count));
        for (uint64_t i = 0; i < count; ++i) {
            elements.push_back(readValue(cursor, elementType, depth + 1));
        }
        return {GgufValueType::Array, std::move(elements), static_cast<GgufValueType>(elementType)};
    }
    }
    cursor.fail("a metadata value has type " + std::to_string(typeId) + "; GGUF's value types are 0 to 12");
}

uint64_t alignUp(uint64_t offset, uint64_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

} // namespace

GgufFile::GgufFile(const std::filesystem::path& path)
    : GgufFile(std::make_shared<const Bytes>(path), path.string()) {}

GgufFile GgufFile::fromBytes(std::vector<uint8_t> bytes, const std::string& name) {
    return GgufFile(std::make_shared<const Bytes>(std::move(bytes)), name);
}

GgufFile::GgufFile(std::shared_ptr<const Bytes> bytes, std::string name)
    : m_bytes(std::move(bytes)), m_name(std::move(name)), m_metadata(m_name) {
    parse();
}

uint64_t GgufFile::fileSize() const { return m_bytes->size(); }

void GgufFile::parse() {
    Cursor cursor(m_bytes->data(), m_bytes->size(), m_name);
    if (m_bytes->size() < 4 || std::memcmp(m_bytes->data(), "GGUF", 4) != 0) {
        char start[32] = "";
        for (uint64_t i = 0; i < 4 && i < m_bytes->size(); ++i) {
            std::snprintf(start + 3 * i, 4, "%02X ", m_bytes->data()[i]);
        }
        throw GgufError("`" + m_name + "` is not a GGUF file: it starts with bytes " +
                        (m_bytes->size() == 0 ? std::string("(none: it is empty)") : std::string(start)) +
                        "instead of `GGUF` (llama.cpp's model files end in .gguf)");
    }
    cursor.take(4, "the magic");
    m_version = cursor.read<uint32_t>("the version");
    if (m_version != 2 && m_version != 3) {
        const bool swapped = (m_version & 0xffffu) == 0 && m_version != 0;
        throw GgufError("GGUF file `" + m_name + "` is " +
                        (swapped ? std::string("big-endian") : "version " + std::to_string(m_version)) +
                        "; kvscope reads little-endian GGUF versions 2 and 3 (convert the model again with a "
                        "current llama.cpp `convert_hf_to_gguf.py`)");
    }
    const uint64_t tensorCount = cursor.read<uint64_t>("the tensor count");
    const uint64_t metadataCount = cursor.read<uint64_t>("the metadata count");
    // A key-value pair takes at least 12 bytes, a tensor info at least 24.
    if (metadataCount > cursor.remaining() / 12) {
        cursor.fail("it claims " + std::to_string(metadataCount) + " metadata entries");
    }
    for (uint64_t i = 0; i < metadataCount; ++i) {
        std::string key = cursor.string("a metadata key", 65535);
        const uint32_t type = cursor.read<uint32_t>("a metadata value type");
        GgufValue value = readValue(cursor, type, 0);
        if (!m_metadata.insert(key, std::move(value))) {
            cursor.fail("metadata key `" + key + "` appears twice");
        }
    }
    if (const GgufValue* alignment = m_metadata.find("general.alignment")) {
        if (alignment->type() != GgufValueType::U32) {
            throw GgufError("GGUF file `" + m_name + "` has `general.alignment` of type " +
                            valueTypeName(static_cast<uint32_t>(alignment->type())) + "; GGUF requires UINT32");
        }
        m_alignment = alignment->asUnsigned("general.alignment");
        if (m_alignment == 0 || (m_alignment & (m_alignment - 1)) != 0) {
            throw GgufError("GGUF file `" + m_name + "` has `general.alignment` " + std::to_string(m_alignment) +
                            "; it must be a power of two (32 by default)");
        }
    }
    if (tensorCount > cursor.remaining() / 24) {
        cursor.fail("it claims " + std::to_string(tensorCount) + " tensors");
    }
    m_tensors.reserve(static_cast<size_t>(tensorCount));
    std::vector<uint64_t> storedOffsets;
    for (uint64_t i = 0; i < tensorCount; ++i) {
        GgufTensorInfo info;
        info.name = cursor.string("a tensor name", maxTensorName);
        const uint32_t dimCount = cursor.read<uint32_t>("a tensor's dimension count");
        if (dimCount == 0 || dimCount > maxDims) {
            cursor.fail("tensor `" + info.name + "` has " + std::to_string(dimCount) +
                        " dimensions; ggml tensors have 1 to " + std::to_string(maxDims));
        }
        info.elementCount = 1;
        for (uint32_t d = 0; d < dimCount; ++d) {
            const uint64_t extent = cursor.read<uint64_t>("a tensor dimension");
            if (extent == 0 || extent > (uint64_t{1} << 48) || info.elementCount > (uint64_t{1} << 48) / extent) {
                cursor.fail("tensor `" + info.name + "` has dimension " + std::to_string(d) + " of " +
                            std::to_string(extent) + ", which makes no tensor a file can hold");
            }
            info.dims.push_back(extent);
            info.elementCount *= extent;
        }
        const uint32_t typeId = cursor.read<uint32_t>("a tensor type");
        const GgmlTypeTraits* traits = BlockType::ggmlType(typeId);
        if (traits == nullptr) {
            cursor.fail("tensor `" + info.name + "` has ggml type " + std::to_string(typeId) +
                        ", which ggml does not define");
        }
        info.type = *traits;
        if (info.dims[0] % traits->blockSize != 0) {
            cursor.fail("tensor `" + info.name + "` has rows of " + std::to_string(info.dims[0]) + " values, not a " +
                        "multiple of " + traits->name + "'s block of " + std::to_string(traits->blockSize));
        }
        info.byteSize = info.elementCount / traits->blockSize * traits->typeSize;
        const uint64_t offset = cursor.read<uint64_t>("a tensor offset");
        if (offset % m_alignment != 0) {
            cursor.fail("tensor `" + info.name + "` starts at offset " + std::to_string(offset) +
                        ", not a multiple of the alignment " + std::to_string(m_alignment));
        }
        storedOffsets.push_back(offset);
        if (!m_index.emplace(info.name, m_tensors.size()).second) {
            cursor.fail("tensor `" + info.name + "` appears twice");
        }
        m_tensors.push_back(std::move(info));
    }
    m_dataOffset = alignUp(cursor.position(), m_alignment);
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        GgufTensorInfo& info = m_tensors[i];
        const uint64_t size = m_bytes->size();
        if (m_dataOffset > size || storedOffsets[i] > size - m_dataOffset ||
            info.byteSize > size - m_dataOffset - storedOffsets[i]) {
            throw GgufError("GGUF file `" + m_name + "` is truncated or damaged: tensor `" + info.name + "` (" +
                            std::to_string(info.byteSize) + " bytes of " + info.type.name + ") would end past the " +
                            "file's " + std::to_string(size) + " bytes");
        }
        info.fileOffset = m_dataOffset + storedOffsets[i];
    }
}

const GgufTensorInfo* GgufFile::find(const std::string& tensorName) const {
    auto it = m_index.find(tensorName);
    return it == m_index.end() ? nullptr : &m_tensors[it->second];
}

const GgufTensorInfo& GgufFile::tensor(const std::string& tensorName) const {
    const GgufTensorInfo* info = find(tensorName);
    if (info == nullptr) {
        throw GgufError("GGUF file `" + m_name + "` has no tensor `" + tensorName + "`");
    }
    return *info;
}

std::span<const uint8_t> GgufFile::bytes(const GgufTensorInfo& info) const {
    return {m_bytes->data() + info.fileOffset, static_cast<size_t>(info.byteSize)};
}

void GgufFile::dequantize(const GgufTensorInfo& info, float* out) const {
    const BlockType* type = BlockType::find(info.type.id);
    if (type == nullptr) {
        throw GgufError("GGUF file `" + m_name + "` stores tensor `" + info.name + "` as " + info.type.name +
                        ", which kvscope does not read; it reads " + BlockType::readNames() +
                        " (re-quantise the model to one of them with llama.cpp's llama-quantize)");
    }
    type->dequantize(bytes(info).data(), static_cast<size_t>(info.elementCount / type->blockSize()), out);
}

std::vector<float> GgufFile::dequantize(const std::string& tensorName) const {
    const GgufTensorInfo& info = tensor(tensorName);
    std::vector<float> out(static_cast<size_t>(info.elementCount));
    dequantize(info, out.data());
    return out;
}

} // namespace kvscope::gguf
