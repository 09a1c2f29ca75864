# SPDX-License-Identifier: Apache-2.0
"""The QEMU command line that boots a kernel under TCG (x86_64, arm64)."""

# What each architecture boots with.  x86_64: PVH boot of the ELF vmlinux,
# the guest sets QEMU's exit status through isa-debug-exit, and the kernel
# gets no_timer_check: under TCG on a loaded host the IO-APIC timer check
# at boot can miss its ticks and panic ("IO-APIC + timer doesn't work"),
# the usual fix under emulation.  arm64: the
# Image as shipped on -M virt with EL2 (virtualization=on: KVM works
# inside), the guest ends QEMU through semihosting (tlbb-exit.c).
_ARCH = {
    'amd64': {
        'qemu': 'qemu-system-x86_64', 'console': 'ttyS0',
        'append': 'no_timer_check',
        'machine': [],
        'exit': ['-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04'],
    },
    'arm64': {
        'qemu': 'qemu-system-aarch64', 'console': 'ttyAMA0',
        'append': '',
        'machine': ['-M', 'virt,virtualization=on,gic-version=3'],
        'exit': ['-semihosting-config',
                 'enable=on,target=native,userspace=on'],
    },
}


def console_device(arch):
    """The guest's serial console device name (console=... on the kernel
    command line)."""
    return _ARCH[arch]['console']


def qemu_argv(kernel, initrd, append='', mem='2G', smp='2', accel='tcg',
              serial='stdio', extra=()):
    """argv booting kernel (a boot.Kernel) with initrd: -cpu max, no
    display, no reboot (a panic ends QEMU with status 0, which callers
    must treat as a failure), the architecture's own kernel arguments
    (x86_64: no_timer_check) before append, no default devices, the
    serial console on serial (a QEMU chardev: 'stdio', 'file:PATH'), the
    guest's exit device, then extra arguments.  mem and smp are QEMU's
    own syntax ('2G' or 2048; '4,sockets=1,clusters=2,cores=2')."""
    a = _ARCH[kernel.arch]
    argv = [a['qemu']] + a['machine'] + [
        '-accel', accel, '-cpu', 'max', '-m', str(mem), '-smp', str(smp),
        '-kernel', kernel.image, '-initrd', initrd,
        '-append', ' '.join(w for w in ('console=' + a['console'],
                                        a['append'], append) if w),
        '-nodefaults', '-display', 'none', '-monitor', 'none',
        '-no-reboot', '-serial', serial]
    return argv + a['exit'] + list(extra)
