# SPDX-License-Identifier: Apache-2.0
"""How much of an untrusted value goes into a message or a log line.

A domain's XML, a flavor's extra specs and a configfs value come from
users: a bad one of a megabyte must not make a megabyte error message (nor
a syslog datagram too large to be sent). Standard library only (the hook
imports this).
"""

SHOWN_MAX = 80      # characters of a bad value quoted in a message
LINE_MAX = 2000     # characters of one log line or logged field


def shown(value, limit=SHOWN_MAX):
    """``repr(value)``, of at most ``limit`` characters of it, saying how
    long it was when cut."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return '%r... (%d characters)' % (value[:limit], len(value))
    text = repr(value)
    if len(text) > limit:
        return '%s... (%d characters)' % (text[:limit], len(text))
    return text


def clip(text, limit=LINE_MAX):
    """``text`` cut to ``limit`` characters, saying so."""
    if len(text) <= limit:
        return text
    return '%s... (cut, %d characters)' % (text[:limit], len(text))
