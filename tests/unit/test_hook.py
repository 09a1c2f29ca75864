# SPDX-License-Identifier: Apache-2.0
"""The hook's phases over a temporary /proc, /sys, libvirt run dir and a
directory tree standing in for the module's configfs.

UNIT TEST ONLY for the registration path: the module cannot be loaded on
this host; tests/integration runs the hook under a real libvirtd (module
absent) and tests/e2e against the real module inside a booted kernel.
"""

import io
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from nova_tlbbalance.hook import install
from nova_tlbbalance.hook import log
from nova_tlbbalance.hook import main as hook_main
from nova_tlbbalance.hook import phases
from nova_tlbbalance import module_defs
from nova_tlbbalance.probes import proc

MiB = 1 << 20
PID = 4321

DOMAIN = """<domain type='kvm'>
  <name>vm1</name><uuid>8700de68-5f03-4b08-add1-b64dbaea62f9</uuid>
  <metadata>
    <tlbbalance:policy
       xmlns:tlbbalance="http://openstack.org/xmlns/tlbbalance/1.0"
       mode="balance" backing="%(backing)s" tlbi_scope="%(scope)s"
       strict="%(strict)s">
      <tlbbalance:param name="imbalance_threshold" value="25"/>
    </tlbbalance:policy>
  </metadata>
  <memory unit='MiB'>256</memory>
  %(membacking)s
  <vcpu>2</vcpu>
  <cpu><numa><cell id='0' cpus='0' memory='%(cell0)d' unit='MiB'/>
  <cell id='1' cpus='1' memory='%(cell1)d' unit='MiB'/></numa></cpu>
  <os><type arch='x86_64' machine='pc-i440fx-7.2'>hvm</type></os>
</domain>"""


def domain(backing='thp', scope='none', strict='false', cells=(128, 128),
           membacking=''):
    return (DOMAIN % dict(backing=backing, scope=scope, strict=strict,
                          cell0=cells[0], cell1=cells[1],
                          membacking=membacking)).encode()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A QEMU process with two vCPU threads and two RAM blocks."""
    p, s, run = (str(tmp_path / n) for n in ('proc', 'sys', 'run'))
    write('%s/vm1.pid' % run, str(PID))
    for tid, comm in ((PID, 'qemu-system-x86'), (PID + 1, 'CPU 0/KVM'),
                      (PID + 2, 'CPU 1/KVM')):
        write('%s/%d/task/%d/comm' % (p, PID, tid), comm)
    write('%s/kernel/mm/transparent_hugepage/hpage_pmd_size' % s, '2097152')
    write('%s/kernel/mm/transparent_hugepage/enabled' % s,
          'always [madvise] never')
    write('%s/devices/system/node/node0/hugepages/hugepages-2048kB/'
          'free_hugepages' % s, '200')
    write(p + '/meminfo', 'Hugepagesize:       2048 kB\n')
    fake.maps = lambda sizes: write('%s/%d/maps' % (p, PID), ''.join(
        '%x-%x rw-p 00000000 00:00 0\n' % (0x7f0000000000 + i * GiB8,
                                           0x7f0000000000 + i * GiB8 + m * MiB)
        for i, m in enumerate(sizes)))
    fake.maps((128, 128))
    cfs = tmp_path / 'configfs'
    log = tmp_path / 'hook.jsonl'
    # the settings through the environment (docs/hook.md), and no
    # settings file: the host's /etc/tlbbalance/hook.conf is never read
    for k, v in (('PROC', p), ('SYS', s), ('RUN_DIR', run),
                 ('CONFIGFS', str(cfs)), ('LOG_FILE', str(log)),
                 ('SYSLOG', ''), ('STATE_DIR', str(tmp_path / 'state')),
                 ('CONF', str(tmp_path / 'no-hook.conf'))):
        monkeypatch.setenv('TLBB_HOOK_' + k, v)
    fake.cfs = cfs
    fake.tmp = tmp_path
    fake.records = lambda: [json.loads(x) for x in log.read_text().split(
        '\n') if x] if log.exists() else []
    return fake


GiB8 = 8 << 30


def load_module(fake):
    """Stand in for the module: the vms/ dir and vm1's attribute files."""
    d = fake.cfs / 'vms' / 'vm1'
    d.mkdir(parents=True)
    (fake.cfs / 'version').write_text('1\n')
    for a in ('pid', 'vcpu_tids', 'ranges', 'mode', 'status',
              'commit') + tuple(x.name for x in module_defs.params()):
        (d / a).write_text('')
    return d


def run(op, xml, sub='begin'):
    out = io.BytesIO()
    rc = hook_main.main(['vm1', op, sub, '-'], io.BytesIO(xml), out)
    return rc, out.getvalue()


def test_untagged_and_passthrough(fake):
    plain = b"<domain><name>x</name><memory>1</memory></domain>"
    assert run('started', plain) == (0, b'')
    assert fake.records() == []
    xml = domain()
    assert run('migrate', xml) == (0, xml)          # byte for byte
    assert run('restore', plain) == (0, plain)
    assert run('attach', xml) == (0, b'')
    assert hook_main.main(['vm1'], io.BytesIO(b''), io.BytesIO()) == 2


def test_untagged_path_imports_nothing():
    code = ('import sys, io; from nova_tlbbalance.hook import main as m; '
            'rc = m.main(["x", "started", "begin", "-"], io.BytesIO(b"<d/>"),'
            ' io.BytesIO()); '
            'print(rc, sorted(k for k in sys.modules if k.startswith('
            '"nova_tlbbalance")))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, check=True).stdout.split(' ', 1)
    assert out[0] == '0'
    assert 'phases' not in out[1] and 'policy' not in out[1], out[1]


def test_started_registers(fake):
    d = load_module(fake)
    rc, _ = run('started', domain())
    assert rc == 0
    rec = fake.records()[-1]
    assert rec['result'] == 'registered as vm1 (mode balance)', rec
    assert (rec['pid'], rec['vcpus'], rec['ranges']) == (PID, 2, 2)
    assert (d / 'pid').read_text() == str(PID)
    assert (d / 'vcpu_tids').read_text() == '%d %d' % (PID + 1, PID + 2)
    # pc machine, 256 MiB: both cells below 4 GiB, node0 first
    assert (d / 'ranges').read_text() == (
        '0x7f0200000000 0x8000000 0x0\n'
        '0x7f0000000000 0x8000000 0x8000000\n')
    assert (d / 'imbalance_threshold').read_text() == '25'
    assert (d / 'mode').read_text() == 'balance'
    # stopped: off; release: rmdir (a real configfs removes attributes)
    assert run('stopped', domain(), 'end')[0] == 0
    assert (d / 'mode').read_text() == 'off'
    for f in d.iterdir():
        f.unlink()
    assert run('release', domain(), 'end')[0] == 0
    assert fake.records()[-1]['result'] == 'unregistered'
    assert not d.exists()


def test_module_absent_logged_once(fake, capsys):
    assert run('started', domain())[0] == 0
    assert run('started', domain())[0] == 0
    err = capsys.readouterr().err
    assert err.count('kernel module is not loaded') == 1
    assert fake.records()[-1]['result'] == 'module absent: not registered'
    assert run('started', domain(strict='true'))[0] == 1
    assert 'tlbbalance (strict policy) refuses domain' in \
        capsys.readouterr().err


def test_strict_mode_off_needs_no_module(fake, capsys):
    # the driver plugin (preconditions.module) lets a strict mode-off guest
    # start without the module; the hook must not refuse it afterwards
    off = domain(strict='true').replace(b'mode="balance"', b'mode="off"')
    assert run('started', off)[0] == 0
    assert fake.records()[-1]['result'] == 'module absent: not registered'


def test_misaligned(fake, capsys):
    load_module(fake)
    fake.maps((129, 127))
    assert run('started', domain(cells=(129, 127)))[0] == 0
    rec = fake.records()[-1]
    assert rec['result'].endswith('1 problem(s)'), rec
    assert 'GPA 0x8100000' in capsys.readouterr().err
    rc, _ = run('started', domain(cells=(129, 127), strict='true'))
    assert rc == 1
    assert 'off by 0x100000' in fake.records()[-1]['result']


def test_tlbi_scope_checked(fake, monkeypatch):
    load_module(fake)
    monkeypatch.setattr(proc, 'affinity', lambda tid: (0, 5))
    s = os.environ['TLBB_HOOK_SYS']
    for cpu in range(8):
        base = '%s/devices/system/cpu/cpu%d/topology/' % (s, cpu)
        write(base + 'physical_package_id', '0')
        write(base + 'die_id', str(cpu // 4))
        write(base + 'cluster_id', str(cpu // 2))
    assert run('started', domain(scope='die', strict='true'))[0] == 1
    assert 'span 2 dies' in fake.records()[-1]['result']


HUGEPAGES = "<memoryBacking><hugepages/></memoryBacking>"


def test_prepare_hugetlbfs(fake):
    assert run('prepare', domain('hugetlbfs', membacking=HUGEPAGES))[0] == 0
    assert fake.records()[-1]['result'] == (
        'huge pages available: 128 x 2048 KiB on host node(s) 0 (200 free)')
    big = domain('hugetlbfs', membacking=HUGEPAGES, cells=(300, 300))
    assert run('prepare', big)[0] == 0              # not strict: warn only
    assert 'not enough huge pages' in fake.records()[-1]['result']
    big = domain('hugetlbfs', 'none', 'true', (300, 300), HUGEPAGES)
    assert run('prepare', big)[0] == 1
    assert '200 free 2048 KiB huge pages on host node(s) 0, 300 needed' in \
        fake.records()[-1]['result']
    assert run('prepare', domain('hugetlbfs', strict='true'))[0] == 1
    assert 'no <memoryBacking><hugepages>' in fake.records()[-1]['result']


def test_timeout_is_hard(fake, monkeypatch):
    monkeypatch.setenv('TLBB_HOOK_TIMEOUT', '0.2')

    def slow(*a):
        time.sleep(5)
    monkeypatch.setitem(phases.HANDLERS, 'started', slow)
    t0 = time.monotonic()
    assert run('started', domain())[0] == 0
    assert run('started', domain(strict='true'))[0] == 1
    assert time.monotonic() - t0 < 2
    assert fake.records()[-1]['result'].startswith('timeout')


def test_bad_policy_and_bad_setting_never_block(fake, monkeypatch, capsys):
    bad = domain().replace(b'mode="balance"', b'mode="turbo"')
    assert run('started', bad)[0] == 0
    assert "bad policy" in fake.records()[-1]['result']
    assert "'turbo'" in fake.records()[-1]['result']
    monkeypatch.setenv('TLBB_HOOK_TIMEOUT', 'soon')
    assert run('prepare', domain(strict='true'))[0] == 0
    assert "$TLBB_HOOK_TIMEOUT: timeout = 'soon': not a number" in \
        capsys.readouterr().err
    assert run('start', domain())[0] == 0      # no-op phase: fast path


def test_installed_hook_runs(tmp_path):
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    conf = str(tmp_path / 'hook.conf')
    install.install(dest, sys.executable,
                    {'timeout': 3, 'log_file': str(tmp_path / 'l.jsonl')},
                    conf=conf)
    text = open(dest).read()
    assert text.startswith('#!%s -IS\n' % sys.executable)
    assert 'CONF = %r\n' % conf in text
    assert 'TLBB_HOOK_TIMEOUT' not in text and 'environ' not in text
    assert 'timeout = 3\n' in open(conf).read()
    assert os.access(dest, os.X_OK)
    xml = domain()
    p = subprocess.run([dest, 'vm1', 'migrate', 'begin', '-'], input=xml,
                       capture_output=True, env={'PATH': '/usr/bin:/bin'})
    assert (p.returncode, p.stdout) == (0, xml)
    assert install.main(['--dest', dest, '--uninstall']) == 0
    assert not os.path.exists(dest)


def test_install_rewrites_only_a_changed_hook(tmp_path, capsys):
    """A rollout restarts libvirtd only when the hook changed: the
    installer says "installed" or "unchanged" and leaves an identical,
    executable hook alone (same inode, same mtime)."""
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    conf = str(tmp_path / 'hook.conf')
    argv = ['--dest', dest, '--python', sys.executable, '--config', conf,
            '--timeout', '3']
    assert install.main(argv) == 0
    assert capsys.readouterr().out == 'installed %s\nsettings written %s\n' \
        % (dest, conf)
    st = os.stat(dest)
    assert install.main(argv) == 0
    assert capsys.readouterr().out == 'unchanged %s\nsettings unchanged %s\n' \
        % (dest, conf)
    assert (os.stat(dest).st_ino, os.stat(dest).st_mtime_ns) == \
        (st.st_ino, st.st_mtime_ns)
    with open(dest, 'a') as f:           # hand-edited: put back
        f.write('# edited\n')
    assert install.main(argv) == 0
    assert capsys.readouterr().out.startswith('installed %s\n' % dest)
    os.chmod(dest, 0o644)                # not executable: put back
    assert install.main(argv) == 0
    assert capsys.readouterr().out.startswith('installed ')
    assert os.access(dest, os.X_OK)
    # other settings: the file changes, the hook does not (no libvirtd
    # restart for a setting)
    assert install.main(argv[:-1] + ['4']) == 0
    assert capsys.readouterr().out == 'unchanged %s\nsettings written %s\n' \
        % (dest, conf)
    assert 'timeout = 4\n' in open(conf).read()


def test_teardown_path_is_light(fake):
    code = ('import sys, io; from nova_tlbbalance.hook import main as m; '
            'rc = m.main(["vm1", "stopped", "end", "-"], io.BytesIO(%r),'
            ' io.BytesIO()); '
            'print(rc, sorted(k for k in sys.modules if k.startswith('
            '"nova_tlbbalance")))' % domain())
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, check=True).stdout.split(' ', 1)
    assert out[0] == '0'
    for heavy in ('policy', 'probes', 'module_defs', 'phases'):
        assert heavy not in out[1], out[1]
    assert fake.records()[-1]['result'] == 'module absent'


def test_installed_hook_without_package_never_blocks(tmp_path):
    dest = str(tmp_path / 'tlbbalance')
    with open(install.template_path()) as f:
        text = install.render(f.read(), sys.executable, str(tmp_path / 'x'),
                              None)
    with open(dest, 'w') as f:
        f.write(text)
    os.chmod(dest, 0o755)
    env = {'PATH': '/usr/bin:/bin'}     # -S: no site-packages either
    p = subprocess.run([dest, 'vm1', 'started', 'begin', '-'],
                       input=domain(), capture_output=True, env=env)
    assert p.returncode == 0, p.stderr
    assert b'cannot import nova_tlbbalance' in p.stderr
    p = subprocess.run([dest, 'vm1', 'started', 'begin', '-'],
                       input=domain(strict='true'), capture_output=True,
                       env=env)
    assert p.returncode == 1
    p = subprocess.run([dest, 'vm1', 'restore', 'begin', '-'],
                       input=domain(), capture_output=True, env=env)
    assert (p.returncode, p.stdout) == (0, domain())


LEVELS = {3: 'err', 4: 'warning', 6: 'info', 7: 'debug'}


@pytest.fixture
def syslog(fake, monkeypatch):
    """A real datagram socket standing in for /dev/log; returns a function
    giving [(level, message)] received so far."""
    path = str(fake.tmp / 'log.sock')
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.setblocking(False)
    monkeypatch.setenv('TLBB_HOOK_SYSLOG', path)

    def received():
        out = []
        while True:
            try:
                data = s.recv(1 << 21)
            except BlockingIOError:
                return out
            m = re.match(rb'<(\d+)>tlbbalance-hook\[\d+\]: (.*)$', data,
                         re.S)
            assert m, data[:200]
            pri = int(m.group(1))
            assert pri >> 3 == 3, pri               # facility daemon
            out.append((LEVELS[pri & 7], m.group(2).decode()))
    yield received
    s.close()


def summaries(received):
    return [(lvl, log.parse_summary(msg)) for lvl, msg in received
            if msg.startswith('domain=')]


def test_registration_failure_is_warning_or_err(fake, syslog):
    """A refused registration is not 'info'."""
    d = load_module(fake)
    (d / 'ranges').unlink()
    (d / 'ranges').mkdir()                         # write() -> EISDIR
    assert run('started', domain())[0] == 0
    assert run('started', domain(strict='true'))[0] == 1
    assert run('started', domain().replace(b'"balance"', b'"turbo"'))[0] == 0
    got = summaries(syslog())
    print(got)
    assert [(lvl, s['phase'], s['rc']) for lvl, s in got] == [
        ('warning', 'started', '0'), ('err', 'started', '1'),
        ('warning', 'started', '0')]
    assert got[0][1]['result'].startswith('failed: ')
    assert 'EISDIR' in got[0][1]['result']
    assert got[2][1]['result'].startswith('bad policy: ')
    # a phase that did its work stays info
    (d / 'ranges').rmdir()
    (d / 'ranges').write_text('')
    assert run('started', domain())[0] == 0
    assert summaries(syslog())[0][0] == 'info'


def test_huge_bad_value_is_bounded(fake, syslog):
    """A 1 MiB invalid attribute gives a short record
    (and the syslog line is sent, not lost)."""
    big = 'x' * (1 << 20)
    bad = domain().replace(b'mode="balance"', b'mode="%s"' % big.encode())
    assert run('started', bad)[0] == 0
    got = syslog()
    assert len(got) == 1, [(lvl, len(m)) for lvl, m in got]
    lvl, msg = got[0]
    print(msg)
    assert lvl == 'warning' and len(msg) < 1000
    s = log.parse_summary(msg)
    assert s['result'].startswith(
        "bad policy: domain 'vm1': <tlbbalance:policy> attribute "
        "tlbbalance:mode: invalid value 'xxxx")
    assert '... (1048576 characters)' in s['result']
    rec = fake.records()[-1]
    assert len(json.dumps(rec)) < 1000 and rec['result'] == s['result']


def test_summary_line_is_quoted(fake, syslog):
    """Values with spaces, quotes, '=' read back as one
    field each."""
    name = 'my vm x=1 "q" \\ end'
    write('%s/%s.pid' % (os.environ['TLBB_HOOK_RUN_DIR'],
                         name.replace('"', '&quot;')), str(PID))
    xml = domain().replace(b'<name>vm1</name>',
                           b'<name>my vm x=1 &quot;q&quot; \\ end</name>')
    rc = hook_main.main([name, 'started', 'begin', '-'], io.BytesIO(xml),
                        io.BytesIO())
    assert rc == 0
    (lvl, s), = summaries(syslog())
    print(s)
    assert s['domain'] == name
    assert s['phase'] == 'started' and s['sub'] == 'begin'
    assert s['result'] == 'module absent: not registered'
    assert s['pid'] == str(PID) and s['strict'] == 'False'
    assert set(s) == {'domain', 'phase', 'sub', 'rc', 'strict', 'mode',
                      'result', 'elapsed_ms', 'pid', 'vcpus', 'ranges',
                      'host_thp', 'work_ms'}
    # the format itself: bare when safe, a JSON string otherwise
    assert log.format_summary({'a': 'b c', 'd': 'e', 'f': '', 'g': 'x\ny',
                               'time': 1}) == 'a="b c" d=e f="" g="x\\ny"'
    assert log.parse_summary('a="b c" d=e f="" g="x\\ny"') == {
        'a': 'b c', 'd': 'e', 'f': '', 'g': 'x\ny'}


def _phase_modules(phase):
    """Run one hook phase in a fresh interpreter: [its exit status, the
    repr of the sorted names of the modules it imported]."""
    code = ('import sys, io; from nova_tlbbalance.hook import main as m; '
            'rc = m.main(["vm1", "%s", "begin", "-"], io.BytesIO(%r),'
            ' io.BytesIO()); print(rc, sorted(sys.modules))'
            % (phase, domain()))
    return subprocess.run([sys.executable, '-c', code],
                          capture_output=True, text=True,
                          check=True).stdout.split(' ', 1)


def test_startup_phases_import_what_they_use(fake, monkeypatch):
    """Each phase is a process on the critical path of `virsh start`:
    prepare imports no RAM-map, topology or JSON code, nor socket.py, nor
    logging (rules logs only in nova-compute and verify)."""
    monkeypatch.delenv('TLBB_HOOK_LOG_FILE')
    out = _phase_modules('prepare')
    assert out[0] == '0'
    for heavy in ('nova_tlbbalance.probes.memmap', 'json', 'socket',
                  'nova_tlbbalance.probes.topology', 'logging',
                  'threading', 'dataclasses', 'inspect'):
        assert "'%s'" % heavy not in out[1], heavy


def test_started_phase_imports_no_logging(fake, monkeypatch):
    """started (on the critical path too) checks alignment through
    rules: that needs no logging package, nor dataclasses (the records it
    reads are nova_tlbbalance.record's: ~15 ms of CPU less a phase)."""
    monkeypatch.delenv('TLBB_HOOK_LOG_FILE')
    out = _phase_modules('started')
    assert out[0] == '0'
    assert "'nova_tlbbalance.rules'" in out[1]      # it did check
    for heavy in ('logging', 'threading', 'dataclasses', 'inspect'):
        assert "'%s'" % heavy not in out[1], heavy


def installed(fake, tmp_path, **settings):
    """The hook installed as libvirtd runs it, settings in its file; the
    fake fixture's environment points it at the fake trees."""
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    install.install(dest, sys.executable, settings,
                    conf=str(tmp_path / 'hook.conf'))
    env = {k: v for k, v in os.environ.items() if k.startswith('TLBB_')}
    env.update(PATH='/usr/bin:/bin')
    env.pop('TLBB_HOOK_CONF')
    return dest, env


def fifo(path):
    os.unlink(path)
    os.mkfifo(path)


def feed(path, text):
    """Write text into a FIFO the hook's child is (about to be) reading;
    bounded: the child opens it within seconds or the test fails."""
    fd = None
    end = time.monotonic() + 20
    while fd is None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:             # ENXIO: no reader yet
            assert time.monotonic() < end, 'nobody opened %s' % path
            time.sleep(0.05)
    os.write(fd, text.encode())
    os.close(fd)


def wait_record(fake, phase, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        recs = [r for r in fake.records() if r['phase'] == phase]
        if recs:
            return recs[-1]
        time.sleep(0.05)
    raise AssertionError('no %s record: %s' % (phase, fake.records()))


def test_background_phase_does_not_hold_libvirt(fake, tmp_path):
    """background = true: the hook process returns (and closes libvirt's
    pipes) while its child still works; the record says background.
    (A hugetlbfs domain: a non-strict THP one skips prepare.)"""
    dest, env = installed(fake, tmp_path, background='true')
    meminfo = os.path.join(env['TLBB_HOOK_PROC'], 'meminfo')
    fifo(meminfo)   # the child's prepare blocks reading it
    p = subprocess.run([dest, 'vm1', 'prepare', 'begin', '-'],
                       input=domain('hugetlbfs', membacking=HUGEPAGES),
                       capture_output=True, env=env, timeout=30)
    assert (p.returncode, p.stdout, p.stderr) == (0, b'', b'')
    assert fake.records() == []     # the work is not done yet
    feed(meminfo, 'Hugepagesize:       2048 kB\n')
    rec = wait_record(fake, 'prepare')
    assert (rec['result'], rec.get('background')) == (
        'huge pages available: 128 x 2048 KiB on host node(s) 0 '
        '(200 free)', True)


def test_background_keeps_strict_domains_in_the_foreground(fake, tmp_path):
    dest, env = installed(fake, tmp_path, background='true')
    for strict in ('true', 'TRUE', 'yes', 'junk'):
        p = subprocess.run([dest, 'vm1', 'prepare', 'begin', '-'],
                           input=domain(strict=strict),
                           capture_output=True, env=env, timeout=30)
        rec = fake.records()[-1]    # written before the process ended
        assert 'background' not in rec, (strict, rec)
        assert p.returncode in (0, 1)


def test_teardown_waits_for_a_background_registration(fake, tmp_path):
    """A destroy right after start: `stopped` waits for the background
    `started` of the same domain, so the VM is never left switched on
    (without the wait, `mode off` would come first and the child's
    `mode` write after it)."""
    vm = load_module(fake)
    dest, env = installed(fake, tmp_path, background='true')
    maps = '%s/%d/maps' % (env['TLBB_HOOK_PROC'], PID)
    with open(maps) as f:
        text = f.read()
    fifo(maps)      # the child's `started` blocks reading it
    p = subprocess.run([dest, 'vm1', 'started', 'begin', '-'],
                       input=domain(), capture_output=True, env=env,
                       timeout=30)
    assert p.returncode == 0 and fake.records() == []
    rel = subprocess.Popen([dest, 'vm1', 'stopped', 'end', '-'],
                           stdin=subprocess.PIPE, env=env)
    rel.stdin.write(domain())
    rel.stdin.close()
    time.sleep(0.5)                 # it stays blocked on the child's lock
    assert rel.poll() is None and fake.records() == []
    feed(maps, text)
    assert rel.wait(timeout=30) == 0
    phases_seen = [r['phase'] for r in fake.records()]
    assert phases_seen == ['started', 'stopped'], fake.records()
    assert fake.records()[0]['result'].startswith('registered as vm1')
    assert fake.records()[1]['result'] == 'switched off'
    assert vm.joinpath('pid').read_text() == str(PID)
    assert vm.joinpath('mode').read_text() == 'off'


def test_broken_installation_never_blocks_a_non_strict_vm(tmp_path):
    """A module of the package that no longer imports (here a merge
    conflict left in hook/phases.py, as once happened under a running
    cloud) is reported; only a strict tagged domain is refused."""
    import nova_tlbbalance
    import shutil
    src = os.path.dirname(os.path.abspath(nova_tlbbalance.__file__))
    shutil.copytree(src, str(tmp_path / 'nova_tlbbalance'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    with open(str(tmp_path / 'nova_tlbbalance/hook/phases.py'), 'a') as f:
        f.write('\n<<<<<<< HEAD\n')
    code = ('import sys, io; from nova_tlbbalance.hook import main as m; '
            'sys.exit(m.main(sys.argv[1:], sys.stdin.buffer, '
            'sys.stdout.buffer))')
    for strict, rc in (('false', 0), ('true', 1)):
        p = subprocess.run([sys.executable, '-c', code, 'vm1', 'started',
                            'begin', '-'], input=domain(strict=strict),
                           capture_output=True, cwd=str(tmp_path),
                           env={'PATH': '/usr/bin:/bin',
                                'TLBB_HOOK_CONF': os.devnull}, timeout=60)
        assert p.returncode == rc, p.stderr
        assert b'internal error in started begin (SyntaxError' in p.stderr


# -- newer and older pieces (docs/upgrade.md), reconnect -------------------

def test_newer_policy_attribute_is_managed_with_a_warning(fake, capsys):
    d = load_module(fake)
    newer = domain().replace(b'strict=', b'colour="red" strict=')
    assert run('started', newer)[0] == 0
    rec = fake.records()[-1]
    assert rec['result'] == 'registered as vm1 (mode balance)', rec
    assert 'colour' in rec['ignored']
    assert (d / 'mode').read_text() == 'balance'
    err = capsys.readouterr().err
    assert "domain 'vm1': attribute colour of <tlbbalance:policy>: not " \
        "known to this release" in err


def test_strict_unknown_requirement_refuses_the_start(fake, capsys):
    d = load_module(fake)
    newer = domain(strict='true').replace(b'strict=',
                                          b'require_numa="1" strict=')
    for phase in ('prepare', 'started'):
        assert run(phase, newer)[0] == 1
        assert 'require_numa' in fake.records()[-1]['result']
    assert 'refuses domain' in capsys.readouterr().err
    assert (d / 'pid').read_text() == ''            # not registered
    # not strict: warned, managed
    lax = domain().replace(b'strict=', b'require_numa="1" strict=')
    assert run('started', lax)[0] == 0
    assert fake.records()[-1]['result'].startswith('registered')


def test_reconnect_never_refuses_a_running_vm(fake, capsys):
    # libvirt kills the QEMU of a domain whose reconnect hook fails: a
    # strict VM whose registration fails keeps running
    assert run('reconnect', domain(strict='true'))[0] == 0
    rec = fake.records()[-1]
    assert (rec['phase'], rec['rc']) == ('reconnect', 0)
    assert 'not loaded' in rec['result'], rec


def test_reconnect_registers_again_when_missing_or_stale(fake):
    d = load_module(fake)
    assert run('reconnect', domain())[0] == 0       # module held nothing
    assert fake.records()[-1]['result'] == 'registered as vm1 (mode balance)'
    assert run('reconnect', domain())[0] == 0
    assert fake.records()[-1]['result'] == 'already registered as vm1'
    (d / 'pid').write_text('999')                   # another QEMU's
    (d / 'imbalance_threshold').write_text('40')
    assert run('reconnect', domain())[0] == 0
    result = fake.records()[-1]['result']
    assert result.startswith('registered as vm1 (mode balance) (was stale: '
                             'pid 999, QEMU is %d; ' % PID), result
    assert 'imbalance_threshold 40, policy 25' in result
    assert (d / 'pid').read_text() == str(PID)
    assert (d / 'imbalance_threshold').read_text() == '25'


def test_older_module_without_a_parameter_registers_without_it(fake,
                                                               capsys):
    d = load_module(fake)
    (d / 'imbalance_threshold').unlink()
    assert run('started', domain())[0] == 0
    assert fake.records()[-1]['result'] == 'registered as vm1 (mode balance)'
    assert 'no parameter imbalance_threshold (older than this client)' in \
        capsys.readouterr().err
    assert (d / 'mode').read_text() == 'balance'


def test_newer_module_interface_is_used_with_a_warning(fake, capsys):
    load_module(fake)
    (fake.cfs / 'version').write_text('2\n')
    assert run('started', domain())[0] == 0
    assert fake.records()[-1]['result'] == 'registered as vm1 (mode balance)'
    assert "interface version 2 is newer than this client's (1)" in \
        capsys.readouterr().err


def test_reconnect_registers_a_running_strict_vm_despite_its_problems(fake):
    # started refuses it (test_misaligned); once it runs, libvirtd's
    # restart registers it and logs the problem, as reconcile does
    d = load_module(fake)
    fake.maps((129, 127))
    xml = domain(cells=(129, 127), strict='true')
    assert run('reconnect', xml)[0] == 0
    rec = fake.records()[-1]
    assert rec['result'] == ('registered as vm1 (mode balance); '
                             '1 problem(s)'), rec
    assert (d / 'pid').read_text() == str(PID)


# -- strictness on the error paths (docs/hook.md) --------------------------
# nova writes the server's display name into <nova:name> (quotes are not
# escaped in element text), and libvirt keeps <title> and <description>
# as given: tenant text inside the domain XML.

def tenant_named(xml, text='web strict="true"'):
    meta = ('<nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/'
            'nova/1.1"><nova:name>%s</nova:name></nova:instance>' % text)
    return xml.replace(b'<metadata>', b'<metadata>' + meta.encode(), 1) \
        .replace(b'<memory ', b"<description>%s</description><memory "
                 % text.encode(), 1)


def foreign_strict(xml):
    """A strict="true" attribute on an element of another namespace."""
    return xml.replace(b'</metadata>', b'<o:policy xmlns:o="urn:other" '
                       b'strict="true"/></metadata>', 1)


STRICTNESS_CASES = [
    # (label, XML, declared)
    ('not strict', domain(), False),
    ('strict', domain(strict='true'), True),
    ('strict yes', domain(strict=' YES '), True),
    ('tenant name says strict', tenant_named(domain()), False),
    ('tenant name, single quotes', tenant_named(domain(), "x strict='1'"),
     False),
    ('foreign element says strict', foreign_strict(domain()), False),
    ('strict, rest unparsable',
     domain(strict='true').replace(b'"balance"', b'"turbo"'), True),
    ('unknown spelling', domain(strict='junk'), None),
    ('not well-formed', domain(strict='true')[:-10], None),
    ('untagged', b'<domain><name>x</name></domain>', False),
    ('no strict attribute', domain().replace(b'strict="false"', b''), False),
]


@pytest.mark.parametrize('label,xml,want', STRICTNESS_CASES,
                         ids=[c[0] for c in STRICTNESS_CASES])
def test_strictness_is_the_policy_attribute(label, xml, want):
    from nova_tlbbalance.hook import strictness
    assert strictness.declared(xml) is want
    assert strictness.declared(xml.decode()) is want


def test_strictness_spellings_are_the_extra_specs_ones():
    from nova_tlbbalance import extra_specs
    from nova_tlbbalance.hook import strictness
    assert strictness.TRUE == extra_specs._TRUE
    assert strictness.FALSE == extra_specs._FALSE
    from nova_tlbbalance import policy
    assert strictness.POLICY == policy.POLICY_TAG


def bare_hook(tmp_path):
    """The installed hook with its package unimportable (the template's
    fallback runs)."""
    dest = str(tmp_path / 'tlbbalance')
    with open(install.template_path()) as f:
        text = install.render(f.read(), sys.executable, str(tmp_path / 'x'),
                              None)
    with open(dest, 'w') as f:
        f.write(text)
    os.chmod(dest, 0o755)
    return dest


@pytest.mark.parametrize('label,xml,want', STRICTNESS_CASES,
                         ids=[c[0] for c in STRICTNESS_CASES])
def test_template_fallback_refuses_only_a_strict_policy(
        tmp_path, label, xml, want):
    """The installed hook without its package: a tenant's server named
    `web strict="true"` (or a foreign element's strict attribute) no
    longer makes a non-strict VM fail to start; the template's copy of
    the rule answers as hook.strictness does."""
    dest = bare_hook(tmp_path)
    for op in ('prepare', 'started', 'stopped'):
        p = subprocess.run([dest, 'vm1', op, 'begin', '-'], input=xml,
                           capture_output=True, env={'PATH': '/usr/bin:/bin'},
                           timeout=60)
        assert b'cannot import nova_tlbbalance' in p.stderr
        refused = want is True and op != 'stopped'
        assert p.returncode == (1 if refused else 0), (op, p.stderr)
        assert (b'strict policy: domain refused' in p.stderr) == refused


def broken_package(tmp_path):
    import nova_tlbbalance
    import shutil
    src = os.path.dirname(os.path.abspath(nova_tlbbalance.__file__))
    shutil.copytree(src, str(tmp_path / 'nova_tlbbalance'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    with open(str(tmp_path / 'nova_tlbbalance/hook/phases.py'), 'a') as f:
        f.write('\nraise RuntimeError("broken on purpose")\n')


def test_catch_all_ignores_tenant_text_saying_strict(tmp_path):
    """main()'s catch-all (a phase module that raises on import): the
    tenant's name saying strict="true" is not a strict policy."""
    broken_package(tmp_path)
    code = ('import sys, io; from nova_tlbbalance.hook import main as m; '
            'sys.exit(m.main(sys.argv[1:], sys.stdin.buffer, '
            'sys.stdout.buffer))')
    for xml, rc in ((tenant_named(domain()), 0),
                    (foreign_strict(domain()), 0),
                    (tenant_named(domain(strict='true')), 1)):
        p = subprocess.run([sys.executable, '-c', code, 'vm1', 'started',
                            'begin', '-'], input=xml,
                           capture_output=True, cwd=str(tmp_path),
                           env={'PATH': '/usr/bin:/bin',
                                'TLBB_HOOK_CONF': os.devnull}, timeout=60)
        assert p.returncode == rc, p.stderr
        assert b'internal error in started begin (RuntimeError: broken ' \
            b'on purpose)' in p.stderr


def test_background_ignores_tenant_text_saying_strict(fake, tmp_path):
    """background = true: a non-strict VM whose server name says
    strict="true" is still detached (the regex over the whole XML kept
    it in the foreground); a strict policy is not."""
    dest, env = installed(fake, tmp_path, background='true')
    hugetlbfs = domain('hugetlbfs', membacking=HUGEPAGES)
    p = subprocess.run([dest, 'vm1', 'prepare', 'begin', '-'],
                       input=tenant_named(hugetlbfs), capture_output=True,
                       env=env, timeout=30)
    assert (p.returncode, p.stderr) == (0, b'')
    rec = wait_record(fake, 'prepare')
    assert rec.get('background') is True, rec
    p = subprocess.run([dest, 'vm1', 'prepare', 'begin', '-'],
                       input=foreign_strict(domain(strict='true')),
                       capture_output=True, env=env, timeout=30)
    assert 'background' not in fake.records()[-1]


def test_strict_policy_that_does_not_parse_fails_closed(fake, capsys):
    """One rule: a policy element saying strict="true" is strict even when
    another part of it does not parse; the start is refused with the
    parse error named. Not at reconnect (the guest runs already), and
    not for a non-strict or unknown strictness (it runs unmanaged)."""
    bad = domain(strict='true').replace(b'"balance"', b'"turbo"')
    for op in ('prepare', 'started'):
        assert run(op, bad)[0] == 1, op
        err = capsys.readouterr().err
        assert "tlbbalance (strict policy) refuses domain 'vm1': bad " \
            "policy: domain 'vm1': <tlbbalance:policy> attribute" in err
        assert "'turbo'" in err
        rec = fake.records()[-1]
        assert (rec['rc'], rec['strict']) == (1, True), rec
    assert run('reconnect', bad)[0] == 0
    assert fake.records()[-1]['result'].startswith('bad policy: ')
    for other in (domain().replace(b'"balance"', b'"turbo"'),
                  domain(strict='junk'),
                  tenant_named(domain()).replace(b'"balance"', b'"turbo"')):
        assert run('started', other)[0] == 0
        assert fake.records()[-1]['result'].startswith('bad policy: ')


def test_install_check_writes_nothing_and_says_what_it_would(tmp_path,
                                                             capsys):
    """--check (Ansible's check mode): "would install" on a fresh host,
    nothing written; "unchanged" once installed."""
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    conf = str(tmp_path / 'hook.conf')
    argv = ['--dest', dest, '--python', sys.executable, '--config', conf,
            '--timeout', '3']
    assert install.main(argv + ['--check']) == 0
    assert capsys.readouterr().out == (
        'would install %s\nsettings would be written %s\n' % (dest, conf))
    assert not os.path.exists(dest) and not os.path.exists(conf)
    assert install.main(argv) == 0
    capsys.readouterr()
    assert install.main(argv + ['--check']) == 0
    assert capsys.readouterr().out == 'unchanged %s\nsettings unchanged %s\n' \
        % (dest, conf)
    assert install.main(argv[:-1] + ['4', '--check']) == 0
    assert capsys.readouterr().out == (
        'unchanged %s\nsettings would be written %s\n' % (dest, conf))
    assert 'timeout = 3\n' in open(conf).read()


# -- prepare of a non-strict THP domain waits for started -----------------

def test_prepare_of_a_non_strict_thp_domain_waits_for_started(fake):
    """The default flavor's prepare returns at once, before the settings,
    the policy or the log are imported (one interpreter's imports fewer on
    the boot's path); its one check, the host's THP mode, is made and
    recorded by started."""
    code = subprocess.run(
        [sys.executable, '-c', 'import sys\n'
         'from nova_tlbbalance.hook import main\n'
         'rc = main.main(["vm1", "prepare", "begin"])\n'
         'print(rc, sorted(m for m in ("configparser", "json", '
         '"nova_tlbbalance.policy", "nova_tlbbalance.hook.phases") '
         'if m in sys.modules))'],
        input=domain(), capture_output=True, timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
    assert code.stdout.decode().split('\n')[0] == '0 []', code
    assert run('prepare', domain())[0] == 0
    assert fake.records() == []
    load_module(fake)
    assert run('started', domain())[0] == 0
    rec = fake.records()[-1]
    assert rec['host_thp'] == 'thp madvise', rec
    assert rec['result'].startswith('registered as vm1'), rec


def test_started_reports_host_thp_off_for_a_domain_that_skipped_prepare(
        fake):
    write('%s/kernel/mm/transparent_hugepage/enabled'
          % os.environ['TLBB_HOOK_SYS'], 'always madvise [never]')
    assert run('prepare', domain())[0] == 0        # skipped: not strict
    assert fake.records() == []
    assert run('started', domain())[0] == 0        # not strict: warned
    rec = fake.records()[-1]
    assert 'host_thp' not in rec and '1 problem(s)' in rec['result'], rec
    # strict: refused in prepare, as before
    assert run('prepare', domain(strict='true'))[0] == 1
    assert 'transparent huge pages are off' in fake.records()[-1]['result']


@pytest.mark.parametrize('label, xml, waits', [
    ('default flavor', domain(), True),
    ('strict', domain(strict='true'), False),
    ('unknown strictness', domain(strict='junk'), False),
    ('hugetlbfs', domain('hugetlbfs', membacking=HUGEPAGES), False),
    ('no backing', domain('none'), False),
    ('tenant text saying strict', tenant_named(domain()), True),
    ('not XML', b'<domain', False),
    ('no policy element', b'<domain><name>x</name></domain>', False),
])
def test_prepare_can_wait_rule(label, xml, waits):
    from nova_tlbbalance.hook import strictness
    assert strictness.prepare_can_wait(xml) is waits, label
