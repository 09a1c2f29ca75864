# SPDX-License-Identifier: Apache-2.0
"""Shell front end: ``PYTHONPATH=<repo>/tools python3 -m kernels.boot ...``

  qemu-argv KERNEL_DIR INITRD [--append S] [--mem M] [--smp N] [--accel A]
      prints the QEMU argv, one argument a line (bash: mapfile -t)
  modules KERNEL_DIR NAME...
      prints the module files NAME needs, in load order
  build-module KERNEL_DIR OUT_DIR [--rebuild] [--say-prefix P]
      builds tlbbalance.ko for the kernel (W=1, no warning; cached) and
      prints its path; a reused cached module is said on stderr
"""

import argparse
import sys

from . import BootError, Kernel, build_module, qemu_argv


def main(argv=None):
    p = argparse.ArgumentParser(prog='python3 -m kernels.boot')
    sub = p.add_subparsers(dest='action', required=True)
    q = sub.add_parser('qemu-argv')
    q.add_argument('kernel_dir')
    q.add_argument('initrd')
    q.add_argument('--append', default='')
    q.add_argument('--mem', default='2G')
    q.add_argument('--smp', default='2')
    q.add_argument('--accel', default='tcg')
    q.add_argument('--serial', default='stdio')
    m = sub.add_parser('modules')
    m.add_argument('kernel_dir')
    m.add_argument('names', nargs='+')
    b = sub.add_parser('build-module')
    b.add_argument('kernel_dir')
    b.add_argument('out_dir')
    b.add_argument('--rebuild', action='store_true')
    b.add_argument('--say-prefix', default='kernels.boot: ')
    args = p.parse_args(argv)
    try:
        kernel = Kernel.from_dir(args.kernel_dir)
        if args.action == 'qemu-argv':
            out = qemu_argv(kernel, args.initrd, append=args.append,
                            mem=args.mem, smp=args.smp, accel=args.accel,
                            serial=args.serial)
        elif args.action == 'build-module':
            out = [build_module(
                kernel, args.out_dir, rebuild=args.rebuild,
                say=lambda msg: print(args.say_prefix + msg,
                                      file=sys.stderr, flush=True))]
        else:
            out = kernel.module_deps(args.names)
    except (BootError, OSError) as e:
        print('kernels.boot: %s' % e, file=sys.stderr)
        return 1
    for a in out:
        if '\n' in a:
            print('kernels.boot: a newline in argument %r' % a,
                  file=sys.stderr)
            return 2
        print(a)
    return 0


if __name__ == '__main__':
    sys.exit(main())
