# SPDX-License-Identifier: Apache-2.0
"""Write a file only when it changes (standard library only: the hook
installer and the provider config generator use it).

The directory holding the file is trusted (root's /etc/libvirt/hooks,
/etc/nova/provider_config, ...): what is not trusted is a name someone
else may have planted in it. So nothing is written through a
predictable name, and no symlink is followed, neither at the path nor
at the temporary file."""

import os
import stat
import tempfile


def _same(path, text, mode):
    """True if path is a regular file (not a symlink) holding exactly
    text with permission bits mode."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != mode:
            return False
        with os.fdopen(fd, 'rb', closefd=False) as f:
            return f.read() == text.encode('utf-8')
    except (OSError, UnicodeError):
        return False
    finally:
        os.close(fd)


def differs(path, text, mode):
    """Whether :func:`write_if_changed` would write (a dry run: check
    modes report it and change nothing)."""
    return not _same(path, text, mode)


def write_if_changed(path, text, mode):
    """Write text to path with permission bits mode, atomically, unless
    path already is a regular file holding exactly that text with those
    bits. True if it wrote: a deployment tool restarts the service that
    reads the file only then.

    The text goes to a temporary file created with a random name in the
    same directory (O_EXCL, mode 0600, so never through a symlink),
    gets its mode by fchmod on the open descriptor, is synced, then
    renamed over path: a symlink at path is replaced, never followed.
    A directory at path is an error naming it."""
    if _same(path, text, mode):
        return False
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    if os.path.isdir(path) and not os.path.islink(path):
        raise IsADirectoryError(21, 'is a directory, not a file', path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix='.%s.' % os.path.basename(path),
                               suffix='.tmp')
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True
