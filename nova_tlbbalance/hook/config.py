# SPDX-License-Identifier: Apache-2.0
"""Hook settings: ``/etc/tlbbalance/hook.conf``, section ``[hook]``.

Each setting is declared once, in :data:`SETTINGS` (name, type, default,
help); the installer's options, the file it writes, the validation and
the table in docs/hook.md (checked by a test) all follow from it.

Precedence: the default, then the file, then ``TLBB_HOOK_<NAME>`` in the
environment (for tests and benchmarks that run the hook by hand: libvirtd
runs hooks with a scrubbed environment, so in production only the file
counts). The file's path is baked into the installed hook (installer
``--config``); ``TLBB_HOOK_CONF`` overrides it.

A missing file means all defaults. A bad value or an unknown key is a
:class:`ConfigError` naming the key and the file.

Imported on the hook's critical path: stdlib only, ``configparser`` only
when a file is there.
"""

import collections
import os

PATH = '/etc/tlbbalance/hook.conf'
SECTION = 'hook'
ENV_CONF = 'TLBB_HOOK_CONF'
ENV_PREFIX = 'TLBB_HOOK_'


class ConfigError(ValueError):
    """A setting that cannot be used; the message names key and source."""


def _seconds(text):
    try:
        t = float(text)
    except ValueError:
        raise ValueError('not a number of seconds') from None
    if not 0 < t <= 300:
        raise ValueError('allowed 0 < t <= 300 s')
    return t


def _bool(text):
    low = text.strip().lower()
    if low in ('1', 'true', 'yes', 'on'):
        return True
    if low in ('0', 'false', 'no', 'off', ''):
        return False
    raise ValueError('not a boolean (true or false)')


def _path(text):
    return text.strip()


def _path_or_none(text):
    return text.strip() or None


Setting = collections.namedtuple('Setting', 'name type default help')

# One line per setting. Adding one: a line here, a row in docs/hook.md
# (tests/unit/test_hook_config.py checks both agree) and its use.
SETTINGS = (
    Setting('configfs', _path_or_none, None, "the module's configfs root "
            "(empty: /sys/kernel/config/tlbbalance)"),
    Setting('timeout', _seconds, 10.0, 'hard limit per phase, seconds '
            '(0 < t <= 300)'),
    Setting('log_file', _path, '', 'also append one JSON line per phase '
            'here (empty: none)'),
    Setting('state_dir', _path, '/run/tlbbalance', 'once-only log markers'),
    Setting('syslog', _path, '/dev/log', 'syslog socket (empty: stderr '
            'only)'),
    Setting('run_dir', _path, '/run/libvirt/qemu', "libvirt's QEMU run "
            'directory (<name>.pid)'),
    Setting('background', _bool, False, 'prepare/started of a non-strict '
            'domain in a detached child: libvirt does not wait'),
    Setting('proc', _path, '/proc', 'procfs root (tests)'),
    Setting('sys', _path, '/sys', 'sysfs root (tests)'),
)
BY_NAME = {s.name: s for s in SETTINGS}


class Config:
    """The settings as attributes (``config.timeout`` ...)."""

    def __init__(self, **values):
        for s in SETTINGS:
            setattr(self, s.name, values.pop(s.name, s.default))
        if values:
            raise TypeError('unknown hook setting(s): %s'
                            % ', '.join(sorted(values)))
        self.source = {}        # name -> where the value came from

    def __repr__(self):
        return 'Config(%s)' % ', '.join(
            '%s=%r' % (s.name, getattr(self, s.name)) for s in SETTINGS)

    @classmethod
    def load(cls, path=None, env=None):
        """Defaults, then the file (if there), then the environment."""
        env = os.environ if env is None else env
        path = env.get(ENV_CONF) or path or PATH
        c = cls()
        for name, text in read_file(path).items():
            c.set(name, text, path)
        for s in SETTINGS:
            var = ENV_PREFIX + s.name.upper()
            if var in env:
                c.set(s.name, env[var], '$' + var)
        return c

    def set(self, name, text, where):
        s = BY_NAME.get(name)
        if s is None:
            raise ConfigError('%s: unknown hook setting %r (known: %s)'
                              % (where, name,
                                 ', '.join(x.name for x in SETTINGS)))
        try:
            value = s.type(text)
        except ValueError as exc:
            raise ConfigError('%s: %s = %r: %s' % (where, name, text, exc)
                              ) from None
        setattr(self, name, value)
        self.source[name] = where


def read_file(path):
    """{name: text} of the file's [hook] section; {} when there is none."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError('%s: cannot read: %s' % (path, exc.strerror)
                          ) from None
    import configparser
    cp = configparser.ConfigParser(interpolation=None, strict=True,
                                   default_section='\x00none')
    try:
        cp.read_string(text, path)
    except configparser.Error as exc:
        raise ConfigError('%s: %s' % (path, ' '.join(str(exc).split()))
                          ) from None
    other = [s for s in cp.sections() if s != SECTION]
    if other:
        raise ConfigError('%s: unknown section(s) %s (only [%s])'
                          % (path, ', '.join('[%s]' % s for s in other),
                             SECTION))
    return dict(cp.items(SECTION)) if cp.has_section(SECTION) else {}


def render(values):
    """The text of a hook.conf: given values set, the others as commented
    defaults, each with its help."""
    out = ['# nova-tlbbalance libvirt hook settings (docs/hook.md).',
           '# Read by the hook at every run: no libvirtd restart needed.',
           '[%s]' % SECTION]
    for s in SETTINGS:
        out.append('# %s' % s.help)
        v = values.get(s.name)
        if v is None:
            out.append('#%s = %s' % (s.name, '' if s.default is None
                                     else s.default))
        else:
            out.append('%s = %s' % (s.name, v))
    return '\n'.join(out) + '\n'


def check(values, where):
    """Validate {name: text}; raises ConfigError naming the culprit."""
    c = Config()
    for name, text in values.items():
        if text is not None:
            c.set(name, str(text), where)
    return c


def main(argv=None):
    """``python3 -m nova_tlbbalance.hook.config [--check] [FILE]``:
    check a hook.conf and print the settings in effect (Ansible's
    ``validate``)."""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog='python3 -m nova_tlbbalance.hook.'
                                'config', description=main.__doc__.split(
                                    '\n')[0].strip('`:'))
    p.add_argument('--check', action='store_true',
                   help='only check, print nothing when the file is good')
    p.add_argument('file', nargs='?', default=PATH)
    args = p.parse_args(argv)
    if not os.path.exists(args.file):
        sys.stderr.write('%s: no such file\n' % args.file)
        return 1
    try:
        c = Config.load(args.file, env={})
    except ConfigError as exc:
        sys.stderr.write('%s\n' % exc)
        return 1
    if not args.check:
        for s in SETTINGS:
            print('%s = %s  (%s)' % (s.name, getattr(c, s.name),
                                     c.source.get(s.name, 'default')))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
