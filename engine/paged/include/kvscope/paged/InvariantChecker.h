// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace kvscope::paged {

class Scheduler;

/// The pool's invariants (docs/paged.md), checked over every block and table, O(pool): every block is in
/// the free queue or in at least one table, never both; its reference count is the number of table entries
/// holding it; the free queue's links agree both ways and its size with the count of free blocks; every
/// cached block is in its group's hash map under its hash and vice versa, and that hash is the chain hash
/// of the tokens its table position covers in every running request holding it; a hash is held by several
/// blocks only while a table holds each of them or they wait in the free queue (append-only duplicates);
/// a running request's table has ceil(slots / blockSize) entries, holes only in sliding groups.
class InvariantChecker {
public:
    /// Every violation, one sentence each; empty when all hold.
    static std::vector<std::string> check(const Scheduler& scheduler);
};

} // namespace kvscope::paged
