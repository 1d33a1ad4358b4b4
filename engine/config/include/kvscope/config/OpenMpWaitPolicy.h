// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace kvscope::config {

/// Makes the OpenMP threads LibTorch computes with sleep while they wait instead of spinning
/// (OMP_WAIT_POLICY=PASSIVE): spinning threads take the cores other programs need (a build, a browser), and
/// on a busy machine they starve kvscope's own threads too. OpenMP reads the variable once, when it loads,
/// before main(): so the program sets it and starts itself again, once.
class OpenMpWaitPolicy {
public:
    /// Call first thing in main(). Where OMP_WAIT_POLICY is unset, sets it to PASSIVE and executes the program
    /// again with the same arguments (returning only if that fails); where the user set it, changes nothing.
    static void makePassive(char** argv);
};

} // namespace kvscope::config
