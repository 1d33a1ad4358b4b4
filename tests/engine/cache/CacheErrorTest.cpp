// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/CacheError.h"

#include <gtest/gtest.h>
#include <stdexcept>

namespace kvscope::cache {
namespace {

TEST(CacheErrorTest, KindNamesAreThePythonExceptionNames) {
    EXPECT_STREQ(CacheError(ErrorKind::Value, "m").kindName(), "ValueError");
    EXPECT_STREQ(CacheError(ErrorKind::Index, "m").kindName(), "IndexError");
    EXPECT_STREQ(CacheError(ErrorKind::Type, "m").kindName(), "TypeError");
    EXPECT_STREQ(CacheError(ErrorKind::Runtime, "m").kindName(), "RuntimeError");
    EXPECT_STREQ(CacheError(ErrorKind::Attribute, "m").kindName(), "AttributeError");
}

TEST(CacheErrorTest, KeepsKindAndMessage) {
    const CacheError error(ErrorKind::Index, "index 4 is out of bounds");
    EXPECT_EQ(error.kind(), ErrorKind::Index);
    EXPECT_STREQ(error.what(), "index 4 is out of bounds");
}

TEST(CacheErrorTest, IsCaughtAsRuntimeError) {
    try {
        throw CacheError(ErrorKind::Value, "bad window 0");
    } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), "bad window 0");
        return;
    }
    FAIL() << "CacheError was not caught as std::runtime_error";
}

} // namespace
} // namespace kvscope::cache
