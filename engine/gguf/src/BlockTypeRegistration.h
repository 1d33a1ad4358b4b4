// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gguf/BlockType.h"
#include "Half.h"

/// Defines the accessor BlockType::all() reaches a block type through (its line in BlockTypeList.h).
#define KVSCOPE_BLOCK_TYPE_INSTANCE(Name) const ::kvscope::gguf::BlockType& kvscopeBlockType_##Name()
