# SPDX-License-Identifier: Apache-2.0
"""The initramfs writer: an uncompressed newc cpio archive."""

import os
import stat

DIR = 0o40755
EXEC = 0o100755
FILE = 0o100644


def newc(entries):
    """A newc cpio archive (bytes) from (name, mode, data-or-None) entries,
    owned by root, mtime 0, in the order given."""
    out = []
    ino = 1
    for name, mode, data in list(entries) + [('TRAILER!!!', 0, b'')]:
        data = data or b''
        nameb = name.encode() + b'\0'
        hdr = '070701' + ''.join('%08X' % v for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0,
            len(nameb), 0))
        out.append(hdr.encode() + nameb)
        out.append(b'\0' * (-(110 + len(nameb)) % 4))
        out.append(data)
        out.append(b'\0' * (-len(data) % 4))
        ino += 1
    return b''.join(out)


def tree_entries(src, prefix):
    """Entries for everything under directory src, placed under prefix
    (which the caller creates), sorted by name; modes are kept."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel = os.path.relpath(dirpath, src)
        base = prefix if rel == '.' else '%s/%s' % (prefix, rel)
        for name in dirnames:
            entries.append(('%s/%s' % (base, name), DIR, None))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                entries.append(('%s/%s' % (base, name), 0o120777,
                                os.readlink(path).encode()))
                continue
            with open(path, 'rb') as f:
                entries.append(('%s/%s' % (base, name),
                                stat.S_IFREG | stat.S_IMODE(st.st_mode),
                                f.read()))
    return sorted(entries, key=lambda e: e[0])


def write_initramfs(path, entries):
    """Write the archive atomically (a reader never sees half of it)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'wb') as f:
        f.write(newc(entries))
    os.rename(tmp, path)
    return path
