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


def build_parser():
    parser = argparse.ArgumentParser(
        prog='tlbbalance',
        description='Huge pages that pay off for KVM guests: inspect, '
                    'verify and simulate nova-tlbbalance.')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    sub.required = True
    for name in COMMANDS:
        importlib.import_module('%s.%s' % (__name__, name)).register(sub)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
