// SPDX-License-Identifier: GPL-3.0-or-later
// Every ggml tensor type kvscope reads, one line each, in ggml's id order: KVSCOPE_BLOCK_TYPE(Name), where
// engine/gguf/blocks/Name.cpp defines the class and KVSCOPE_BLOCK_TYPE_INSTANCE(Name). Included by
// src/BlockType.cpp after defining KVSCOPE_BLOCK_TYPE; deliberately no include guard.
KVSCOPE_BLOCK_TYPE(F32)
KVSCOPE_BLOCK_TYPE(F16)
KVSCOPE_BLOCK_TYPE(Q4_0)
KVSCOPE_BLOCK_TYPE(Q4_1)
KVSCOPE_BLOCK_TYPE(Q5_0)
KVSCOPE_BLOCK_TYPE(Q5_1)
KVSCOPE_BLOCK_TYPE(Q8_0)
KVSCOPE_BLOCK_TYPE(Q4_K)
KVSCOPE_BLOCK_TYPE(Q5_K)
KVSCOPE_BLOCK_TYPE(Q6_K)
KVSCOPE_BLOCK_TYPE(IQ4_NL)
KVSCOPE_BLOCK_TYPE(BF16)
