#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Extract the ELF vmlinux from an x86 bzImage (for QEMU's PVH boot).

Usage: extract-vmlinux.py <vmlinuz> <vmlinux-out>

The boot protocol header (>= 2.08) gives the compressed payload's offset
and length (payload_offset at 0x248, payload_length at 0x24c, relative to
the protected-mode code that starts after (setup_sects + 1) * 512 bytes).
The payload's magic says how it is compressed; the result must be an ELF
file with a PVH note (XEN_ELFNOTE_PHYS32_ENTRY), or we fail.
"""

import gzip
import lzma
import struct
import subprocess
import sys


def fail(msg):
    sys.exit('extract-vmlinux: %s' % msg)


def payload_of(image):
    if len(image) < 0x250 or image[0x202:0x206] != b'HdrS':
        fail('not a bzImage (no HdrS header)')
    version = struct.unpack_from('<H', image, 0x206)[0]
    if version < 0x208:
        fail('boot protocol %#x has no payload fields' % version)
    setup_sects = image[0x1f1] or 4
    pm_start = (setup_sects + 1) * 512
    offset, length = struct.unpack_from('<II', image, 0x248)
    start = pm_start + offset
    if start + length > len(image):
        fail('payload %#x+%#x lies outside the image' % (start, length))
    return image[start:start + length]


def external(cmd, data):
    try:
        return subprocess.run(cmd, input=data, stdout=subprocess.PIPE,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        fail('%s failed: %s' % (cmd[0], exc))


def decompress(data):
    if data[:6] == b'\xfd7zXZ\x00':
        # The kernel's xz stream may carry trailing padding.
        return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data)
    if data[:2] == b'\x1f\x8b':
        return gzip.decompress(data)
    if data[:4] == b'\x28\xb5\x2f\xfd':
        # Kbuild appends the decompressed size (4 bytes) after the frame.
        return external(['zstd', '-dcq'], data[:-4])
    if data[:3] == b'\x5d\x00\x00':
        return lzma.LZMADecompressor(lzma.FORMAT_ALONE).decompress(data)
    if data[:4] == b'\x02\x21\x4c\x18':
        return external(['lz4', '-dc'], data)
    if data[:3] == b'BZh':
        return external(['bzip2', '-dc'], data)
    if data[:4] == b'\x89LZO':
        return external(['lzop', '-dc'], data)
    fail('unknown payload compression, magic %s' % data[:6].hex())


def main():
    if len(sys.argv) != 3:
        fail('usage: extract-vmlinux.py <vmlinuz> <vmlinux-out>')
    with open(sys.argv[1], 'rb') as f:
        image = f.read()
    elf = decompress(payload_of(image))
    if elf[:4] != b'\x7fELF':
        fail('decompressed payload is not an ELF file')
    # XEN_ELFNOTE_PHYS32_ENTRY (18) in a "Xen" note makes PVH boot work.
    if b'Xen\x00' not in elf or b'\x12\x00\x00\x00' not in elf:
        fail('vmlinux has no Xen/PVH ELF note: QEMU cannot PVH-boot it')
    with open(sys.argv[2], 'wb') as f:
        f.write(elf)
    print('extract-vmlinux: %s -> %s (%d bytes)'
          % (sys.argv[1], sys.argv[2], len(elf)))


if __name__ == '__main__':
    main()
