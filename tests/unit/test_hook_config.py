# SPDX-License-Identifier: Apache-2.0
"""The hook's settings file (/etc/tlbbalance/hook.conf): one declaration
per setting, read by the installed hook, errors naming key and file.

No test reads or writes the host's /etc/tlbbalance: every file is in
tmp_path and TLBB_HOOK_CONF is never left pointing at the real one.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from nova_tlbbalance.hook import config
from nova_tlbbalance.hook import install

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TAGGED = (b"<domain type='kvm'><name>vm1</name>"
          b"<memory unit='KiB'>131072</memory><metadata>"
          b"<tlbbalance:policy xmlns:tlbbalance='http://openstack.org/xmlns/"
          b"tlbbalance/1.0' mode='monitor' backing='thp' strict='false'/>"
          b"</metadata></domain>")


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith(config.ENV_PREFIX):
            monkeypatch.delenv(k)


def conf_file(tmp_path, text):
    p = tmp_path / 'hook.conf'
    p.write_text(text)
    return str(p)


def test_missing_file_gives_the_declared_defaults(tmp_path):
    c = config.Config.load(str(tmp_path / 'absent.conf'))
    for s in config.SETTINGS:
        assert getattr(c, s.name) == s.default, s.name
    assert c.timeout == 10.0 and c.configfs is None


def test_file_then_environment(tmp_path):
    path = conf_file(tmp_path, '[hook]\ntimeout = 2.5\nsyslog =\n'
                     'state_dir = /x/state\n')
    c = config.Config.load(path, env={})
    assert (c.timeout, c.syslog, c.state_dir) == (2.5, '', '/x/state')
    assert c.source['timeout'] == path
    c = config.Config.load(path, env={'TLBB_HOOK_TIMEOUT': '7',
                                      'TLBB_HOOK_CONFIGFS': '/cfs'})
    assert (c.timeout, c.configfs, c.state_dir) == (7.0, '/cfs', '/x/state')
    assert c.source['timeout'] == '$TLBB_HOOK_TIMEOUT'
    other = conf_file(tmp_path / '..', '[hook]\ntimeout = 3\n')
    assert config.Config.load(path, env={'TLBB_HOOK_CONF': other}
                              ).timeout == 3.0


@pytest.mark.parametrize('text, message', [
    ('[hook]\ntimeout = soon\n', "timeout = 'soon': not a number of seconds"),
    ('[hook]\ntimeout = 0\n', "timeout = '0': allowed 0 < t <= 300 s"),
    ('[hook]\ntimout = 3\n', "unknown hook setting 'timout' (known: "
     'configfs, timeout,'),
    ('[hooks]\ntimeout = 3\n', 'unknown section(s) [hooks] (only [hook])'),
    ('timeout = 3\n', 'File contains no section headers'),
    ('[hook]\ntimeout = 3\ntimeout = 4\n', "option 'timeout' in section "
     "'hook' already exists"),
])
def test_bad_file_names_key_and_file(tmp_path, text, message):
    path = conf_file(tmp_path, text)
    with pytest.raises(config.ConfigError) as e:
        config.Config.load(path, env={})
    assert str(e.value).startswith(path + ':'), e.value
    assert message in str(e.value), e.value


def test_bad_environment_value_names_the_variable():
    with pytest.raises(config.ConfigError, match=r"^\$TLBB_HOOK_TIMEOUT: "
                       r"timeout = 'x': not a number"):
        config.Config.load('/nonexistent/hook.conf',
                           env={'TLBB_HOOK_TIMEOUT': 'x'})


def test_checker_is_what_ansible_validates_with(tmp_path):
    good = conf_file(tmp_path, '[hook]\ntimeout = 4\n')
    p = subprocess.run([sys.executable, '-m', 'nova_tlbbalance.hook.config',
                        '--check', good], capture_output=True, text=True,
                       cwd=REPO)
    assert (p.returncode, p.stdout, p.stderr) == (0, '', '')
    p = subprocess.run([sys.executable, '-m', 'nova_tlbbalance.hook.config',
                        good], capture_output=True, text=True, cwd=REPO)
    assert 'timeout = 4.0  (%s)' % good in p.stdout
    assert 'state_dir = /run/tlbbalance  (default)' in p.stdout
    bad = conf_file(tmp_path, '[hook]\nlog_fil = /x\n')
    p = subprocess.run([sys.executable, '-m', 'nova_tlbbalance.hook.config',
                        '--check', bad], capture_output=True, text=True,
                       cwd=REPO)
    assert p.returncode == 1
    assert p.stderr.startswith("%s: unknown hook setting 'log_fil'" % bad)


def test_docs_table_lists_every_setting_with_its_default():
    """docs/hook.md's table and SETTINGS agree: a new setting without its
    doc row (or a row without a setting) fails here."""
    with open(os.path.join(REPO, 'docs', 'hook.md')) as f:
        text = f.read()
    table = text.split('| setting | default | meaning |\n', 1)[1]
    table = table.split('\n\n', 1)[0]
    rows = re.findall(r'^\| `(\w+)` \| (.*?) \| (.*?) \|$', table, re.M)
    documented = {name: default for name, default, _ in rows}
    assert sorted(documented) == sorted(config.BY_NAME)
    for s in config.SETTINGS:
        shown = '' if s.default is None else str(s.default)
        if shown:
            assert documented[s.name] == '`%s`' % shown, s.name
        else:
            assert documented[s.name].startswith('(empty'), s.name


def test_installer_offers_every_setting_and_writes_them(tmp_path, capsys):
    with pytest.raises(SystemExit):
        install.main(['--help'])
    out = capsys.readouterr().out
    for s in config.SETTINGS:
        assert '--' + s.name.replace('_', '-') in out, s.name
    conf = str(tmp_path / 'etc' / 'hook.conf')
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    assert install.main(['--dest', dest, '--config', conf,
                         '--timeout', '5', '--syslog', '']) == 0
    c = config.Config.load(conf, env={})
    assert (c.timeout, c.syslog, c.state_dir) == (5.0, '', '/run/tlbbalance')
    text = open(conf).read()
    assert '#state_dir = /run/tlbbalance\n' in text     # default, commented
    # a hand edit survives a reinstall without setting options
    with open(conf, 'a') as f:
        f.write('log_file = /x/hook.jsonl\n')
    capsys.readouterr()
    assert install.main(['--dest', dest, '--config', conf]) == 0
    assert capsys.readouterr().out.endswith('settings unchanged %s\n' % conf)
    assert config.Config.load(conf, env={}).log_file == '/x/hook.jsonl'


def test_installer_refuses_a_bad_setting_naming_it(tmp_path, capsys):
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    conf = str(tmp_path / 'hook.conf')
    with pytest.raises(SystemExit) as e:
        install.main(['--dest', dest, '--config', conf, '--timeout', '301'])
    assert e.value.code == 2
    assert "setting: timeout = '301': allowed 0 < t <= 300 s" in \
        capsys.readouterr().err
    assert not os.path.exists(dest) and not os.path.exists(conf)
    # a bad existing file: refused too, not silently installed over
    with open(conf, 'w') as f:
        f.write('[hook]\ntimeout = never\n')
    with pytest.raises(SystemExit):
        install.main(['--dest', dest, '--config', conf])
    assert "%s: timeout = 'never'" % conf in capsys.readouterr().err


def test_a_test_hook_never_defaults_to_the_hosts_file(tmp_path):
    with pytest.raises(ValueError, match='needs conf='):
        install.install(str(tmp_path / 'tlbbalance'), sys.executable, {})
    assert not os.path.exists(os.path.join(str(tmp_path), 'hook.conf'))


def test_installed_hook_reads_its_file_with_a_scrubbed_environment(
        tmp_path):
    """As libvirtd runs it: no TLBB_* variable, the settings come from the
    file the installer wrote; a later edit of the file is seen at once."""
    dest = str(tmp_path / 'qemu.d' / 'tlbbalance')
    conf = str(tmp_path / 'hook.conf')
    log1, log2 = str(tmp_path / 'one.jsonl'), str(tmp_path / 'two.jsonl')
    sysfs = tmp_path / 'sys' / 'kernel' / 'mm' / 'transparent_hugepage'
    sysfs.mkdir(parents=True)
    (sysfs / 'enabled').write_text('always [madvise] never\n')
    install.install(dest, sys.executable,
                    {'log_file': log1, 'syslog': '',
                     'sys': str(tmp_path / 'sys'),
                     'state_dir': str(tmp_path / 'state')}, conf=conf)

    def prepare():
        # strict: a non-strict THP domain's prepare returns before it
        # reads any setting (hook.strictness.prepare_can_wait)
        return subprocess.run([dest, 'vm1', 'prepare', 'begin', '-'],
                              input=TAGGED.replace(b"strict='false'",
                                                   b"strict='true'"),
                              capture_output=True,
                              env={'PATH': '/usr/bin:/bin'}, timeout=60)
    p = prepare()
    assert p.returncode == 0, p.stderr
    rec = json.loads(open(log1).read())
    assert (rec['phase'], rec['result']) == ('prepare', 'thp madvise'), rec
    text = open(conf).read().replace(log1, log2)
    with open(conf, 'w') as f:
        f.write(text)
    assert prepare().returncode == 0
    assert json.loads(open(log2).read())['phase'] == 'prepare'
    # a broken file: logged naming key and file, defaults used, VM goes on
    with open(conf, 'a') as f:
        f.write('timeout = soon\n')
    p = prepare()
    assert p.returncode == 0
    assert ("bad hook setting, using defaults: %s: timeout = 'soon': not "
            "a number of seconds" % conf) in p.stderr.decode(), p.stderr
