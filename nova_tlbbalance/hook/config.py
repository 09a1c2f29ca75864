"""Hook settings, from the environment (the installed hook sets defaults).

libvirtd runs hooks with a scrubbed environment, so the installed hook
script carries its settings as ``os.environ.setdefault`` lines written by
``python -m nova_tlbbalance.hook.install``.
"""

import dataclasses
import os


@dataclasses.dataclass
class Config:
    configfs: str = None            # TLBB_CONFIGFS (modclient's default)
    timeout: float = 10.0           # TLBB_HOOK_TIMEOUT, seconds per phase
    log_file: str = ''              # TLBB_HOOK_LOG: JSON lines, optional
    run_dir: str = '/run/libvirt/qemu'   # TLBB_LIBVIRT_RUN: <name>.pid
    state_dir: str = '/run/tlbbalance'   # TLBB_STATE_DIR: once-markers
    proc: str = '/proc'             # TLBB_PROC (tests)
    sys: str = '/sys'               # TLBB_SYS (tests)
    syslog: str = '/dev/log'        # TLBB_SYSLOG: '' = stderr only

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        c = cls()
        c.configfs = env.get('TLBB_CONFIGFS') or None
        t = env.get('TLBB_HOOK_TIMEOUT')
        if t:
            try:
                c.timeout = float(t)
            except ValueError:
                raise ValueError('TLBB_HOOK_TIMEOUT=%r is not a number of '
                                 'seconds' % t) from None
            if not 0 < c.timeout <= 300:
                raise ValueError('TLBB_HOOK_TIMEOUT=%r: allowed 0 < t <= '
                                 '300 s' % t)
        c.log_file = env.get('TLBB_HOOK_LOG', c.log_file)
        c.run_dir = env.get('TLBB_LIBVIRT_RUN', c.run_dir)
        c.state_dir = env.get('TLBB_STATE_DIR', c.state_dir)
        c.proc = env.get('TLBB_PROC', c.proc)
        c.sys = env.get('TLBB_SYS', c.sys)
        c.syslog = env.get('TLBB_SYSLOG', c.syslog)
        return c
