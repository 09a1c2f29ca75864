# SPDX-License-Identifier: Apache-2.0
"""Run the tlbsim binary and read its results.

The simulator is C (``tlbsim/`` in the repository) and compiles the kernel
module's controller source itself; this module only builds it when needed,
passes options and parses the JSON summary and the per-tick CSV series.
"""

import csv
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

from nova_tlbbalance import module_defs

ENV_BIN = 'TLBSIM_BIN'
MODELS = ('native', 'vz', 'combined')
# the module's modes (kernel-module/core/tlbb_modes.def)
CONTROLLERS = module_defs.mode_names()
SPLIT_ORDERS = ('high', 'low', 'random', 'heat')
SERIES_INT = ('refills_huge', 'refills_small', 'huge_pages', 'huge_limit')
SERIES_FLOAT = ('t_s', 'load_pm', 'imbalance')


class SimError(Exception):
    """tlbsim could not be built or a run failed; the message says why."""


# What to do when there is no tlbsim: the wheel carries no C binary.
NOT_INSTALLED = (
    'the tlbsim simulator is not installed: `tlbbalance simulate` runs '
    'tlbsim, a C program the nova-tlbbalance Python package does not '
    'ship. Build and install it from a nova-tlbbalance source tree '
    '(gcc, make, zlib1g-dev): make -C tlbsim install PREFIX=/usr/local '
    '(puts tlbsim on PATH), or set $%s to a tlbsim binary' % ENV_BIN)


def tlbsim_dir():
    """``tlbsim/`` of the source tree this package belongs to (none when
    the package is installed: then it does not exist)."""
    return pathlib.Path(__file__).resolve().parents[2] / 'tlbsim'


def binary(build=True):
    """Path of the tlbsim binary.

    In order: ``$TLBSIM_BIN``; in a source tree, ``tlbsim/build/tlbsim``,
    built with make (make runs every time, a no-op when up to date, so
    that a changed ``tlbb_ctrl.c`` is never simulated stale); ``tlbsim``
    on ``PATH`` (an installed package, ``make -C tlbsim install``).
    Raises SimError saying what to install when there is none.
    """
    env = os.environ.get(ENV_BIN)
    if env:
        if not os.access(env, os.X_OK):
            raise SimError('$%s=%s is not an executable' % (ENV_BIN, env))
        return env
    src = tlbsim_dir()
    if (src / 'Makefile').is_file():
        if build:
            proc = subprocess.run(['make', '-s', '-C', str(src)],
                                  capture_output=True, text=True)
            if proc.returncode:
                raise SimError('building tlbsim (make -C %s) failed:\n%s'
                               % (src, proc.stderr.strip()))
        path = src / 'build' / 'tlbsim'
        if not path.is_file():
            raise SimError('no tlbsim binary at %s: run make -C %s or set '
                           '$%s' % (path, src, ENV_BIN))
        return str(path)
    found = shutil.which('tlbsim')
    if not found:
        raise SimError(NOT_INSTALLED)
    return found


@dataclasses.dataclass(frozen=True)
class Config:
    """One configuration: translation model, THP at each level, controller.

    ``model`` None means the machine's own two-stage model (vz on Loongson,
    combined on the x86-like presets).
    """
    name: str
    thp_guest: bool = True
    thp_host: bool = True
    controller: str = 'off'
    model: str = None
    hva_offset: int = 0
    # (name, value) tunables of this configuration only (e.g. the method);
    # they follow, so override, the run's common ``params``
    params: tuple = ()
    # host huge pages held from the start (controller off), or None
    huge_limit: int = None

    def args(self):
        out = ['--thp-guest', str(int(self.thp_guest)),
               '--thp-host', str(int(self.thp_host)),
               '--controller', self.controller,
               '--hva-offset', str(self.hva_offset)]
        if self.model:
            out += ['--model', self.model]
        if self.huge_limit is not None:
            out += ['--huge-limit', str(int(self.huge_limit))]
        return out

    def param_args(self):
        return ['--param=%s=%d' % p for p in self.params]


def parse_params(items):
    """``['name=value', ...]`` -> list of (name, int), checked against
    ``tlbb_params.def`` (through module_defs); ValueError names the culprit.
    """
    out = []
    for item in items or ():
        name, sep, value = item.partition('=')
        if not sep:
            raise ValueError('--param %r: use NAME=VALUE' % item)
        try:
            param = module_defs.param(name)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        out.append((name, param.check(value)))
    return out


def read_series(path):
    """The per-tick CSV as a dict of column lists."""
    cols = {}
    with open(path, newline='') as f:
        for row in csv.DictReader(f):
            for key, val in row.items():
                if key in SERIES_INT:
                    val = int(val)
                elif key in SERIES_FLOAT:
                    val = float(val)
                cols.setdefault(key, []).append(val)
    return cols


def run(config, machine='gs464v', workload='mcf', accesses=None,
        seconds=None, params=(), split_order=None, series=True,
        tlbsim=None, access_ns=None, refill_ns=None, huge_limit=None,
        huge_limit_at=None):
    """Run one configuration; the summary dict (plus ``series``).

    ``access_ns``/``refill_ns`` override the machine's cost model (the
    access rate is 1 / access_ns). ``huge_limit`` holds the host's huge
    pages at that many (controller off), from ``huge_limit_at`` simulated
    seconds on if given (the pages fault in huge first, then are split).
    """
    cmd = [tlbsim or binary(), 'run', '--machine', machine,
           '--workload', workload] + config.args()
    if accesses:
        cmd += ['--accesses', str(int(accesses))]
    if seconds:
        cmd += ['--seconds', repr(float(seconds))]
    for name, value in params:
        cmd += ['--param', '%s=%d' % (name, value)]
    cmd += config.param_args()
    if split_order:
        cmd += ['--split-order', split_order]
    if huge_limit is not None:
        cmd += ['--huge-limit', str(int(huge_limit))]
    if huge_limit_at is not None:
        cmd += ['--huge-limit-at', repr(float(huge_limit_at))]
    if access_ns:
        cmd += ['--access-ns', repr(float(access_ns))]
    if refill_ns is not None:
        cmd += ['--refill-ns', repr(float(refill_ns))]
    with tempfile.TemporaryDirectory(prefix='tlbsim-') as tmp:
        path = os.path.join(tmp, 'series.csv')
        if series:
            cmd += ['--series', path]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise SimError('%s: %s' % (config.name, proc.stderr.strip()
                                       or 'tlbsim exited %d'
                                       % proc.returncode))
        result = json.loads(proc.stdout)
        result['name'] = config.name
        if series:
            result['series'] = read_series(path)
    return result
