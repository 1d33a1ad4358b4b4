# SPDX-License-Identifier: GPL-3.0-or-later
"""The one recording in progress, if any.

A module of its own so that every wrapper, whichever module made it, finds the active recorder with
one attribute read, and so that `record` can refuse a second recording while one is active.
"""

current = None
