# SPDX-License-Identifier: Apache-2.0
"""Write a file only when it changes (standard library only: the hook
installer and the provider config generator use it)."""

import os


def write_if_changed(path, text, mode):
    """Write text to path with permission bits mode, atomically, unless
    path already holds exactly that text with those bits. True if it
    wrote: a deployment tool restarts the service that reads the file
    only then."""
    try:
        with open(path) as f:
            if f.read() == text and os.stat(path).st_mode & 0o7777 == mode:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return True
