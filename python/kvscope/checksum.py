# SPDX-License-Identifier: GPL-3.0-or-later
"""CRC-32C (Castagnoli) of header and chunk bytes, as sessions/FORMAT.md requires.

Taken from a packaged library, never a hand-rolled bit loop: `crc32c` (Debian: python3-crc32c,
hardware-accelerated where the CPU has SSE4.2) first, `crcmod`'s predefined "crc-32c" (Debian:
python3-crcmod) as the fallback, so that either Debian package is enough.
"""

try:
    from crc32c import crc32c as _crc32c

    def crc32c(data: bytes) -> int:
        """CRC-32C of `data` (the iSCSI/ext4 polynomial, reflected, final xor)."""
        return _crc32c(data)

except ImportError:  # pragma: no cover - exercised only where python3-crc32c is missing
    import crcmod.predefined

    _function = crcmod.predefined.mkPredefinedCrcFun("crc-32c")

    def crc32c(data: bytes) -> int:
        """CRC-32C of `data` (the iSCSI/ext4 polynomial, reflected, final xor)."""
        return _function(data)
