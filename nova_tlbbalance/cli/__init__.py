"""The ``tlbbalance`` command: one small module per subcommand.

Each module named in COMMANDS defines ``register(subparsers)``, which adds its
parser and sets ``func(args) -> int`` as the parser default.
"""

import argparse
import importlib
import sys

COMMANDS = (
    'status',
    'verify',
    'domain',
    'reconcile',
    'exporter',
    'simulate',
)


def build_parser(only=None):
    """The parser; ``only``: the one subcommand to add (the others' modules
    are not imported: ``reconcile`` after a module load, on a busy node,
    should not pay for ``status``'s and ``simulate``'s imports)."""
    parser = argparse.ArgumentParser(
        prog='tlbbalance',
        description='Huge pages that pay off for KVM guests: inspect, '
                    'verify and simulate nova-tlbbalance.')
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
