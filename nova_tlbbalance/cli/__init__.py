# SPDX-License-Identifier: Apache-2.0
"""The ``tlbbalance`` command: one small module per subcommand.

Each module named in COMMANDS defines ``register(subparsers)``, which adds its
parser and sets ``func(args) -> int`` as the parser default.
"""

import argparse
import importlib
import sys

import nova_tlbbalance

COMMANDS = (
    'status',
    'verify',
    'domain',
    'reconcile',
    'release',
    'reload',
    'collapse',
    'exporter',
    'simulate',
)


def version_text():
    """``tlbbalance --version``: the package's version, and the loaded
    kernel module's when one is loaded (they should be the same; the
    module's is its MODULE_VERSION)."""
    text = 'tlbbalance %s' % nova_tlbbalance.version()
    loaded = nova_tlbbalance.loaded_module_version()
    if loaded:
        text += '\ntlbbalance.ko %s (loaded)' % loaded
    return text


class _Version(argparse.Action):
    """--version, with the module read only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS,
                 default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default,
                         nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(version_text() + '\n')
        parser.exit()


def build_parser(only=None):
    """The parser; ``only``: the one subcommand to add (the others' modules
    are not imported: ``reconcile`` after a module load, on a busy node,
    should not pay for ``status``'s and ``simulate``'s imports)."""
    parser = argparse.ArgumentParser(
        prog='tlbbalance',
        description='Huge pages that pay off for KVM guests: inspect, '
                    'verify and simulate nova-tlbbalance.')
    parser.add_argument('--version', action=_Version,
                        help="print the package's version (and the loaded "
                             "tlbbalance.ko's) and exit")
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    sub.required = True
    for name in COMMANDS if only is None else (only,):
        importlib.import_module('%s.%s' % (__name__, name)).register(sub)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    only = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(only).parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
