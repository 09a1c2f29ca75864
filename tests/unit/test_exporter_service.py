# SPDX-License-Identifier: Apache-2.0
"""The exporter as a service: background collection over one libvirt
connection, what it asks of QEMU, and its HTTP(S) server under real
sockets.

libvirt is a stand-in here (a class with the libvirt_conn.Connection
methods the collector calls), because these tests count connections,
drop them and refuse them on purpose; tests/integration/test_exporter.py
runs the same code against a real libvirtd. The HTTP server, TLS,
basic authentication and the CLI run for real (sockets on loopback, the
``tlbbalance`` command as a subprocess).
"""

import base64
import contextlib
import datetime
import gzip
import http.client
import os
import re
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import bcrypt
import pytest
from prometheus_client import parser as prom_parser

from nova_tlbbalance.cli import exporter as cli_exporter
from nova_tlbbalance import exporter
from nova_tlbbalance import exporter_http
from nova_tlbbalance.probes import libvirt_conn
from nova_tlbbalance.probes import vmreport
from tlbbwait import WaitTimeout, wait_until

import test_probes_vmreport as tp

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
UNTAGGED = tp.XML.replace('<name>vm1</name><uuid>u</uuid>',
                          '<name>vm2</name><uuid>u2</uuid>').split(
    '<metadata>')[0] + tp.XML.split('</metadata>')[1]


class Dom:
    """A libvirt domain handle: its UUID and its ID (new at every
    start)."""

    def __init__(self, uuid, id_):
        self.uuid, self.id = uuid, id_

    def UUIDString(self):
        return self.uuid

    def ID(self):
        return self.id


class StandIn:
    """The libvirt_conn.Connection calls the collector makes; records the
    monitor commands each domain received."""

    opened = 0

    def __init__(self, doms, sent, stats=None):
        StandIn.opened += 1
        self.doms = doms            # [(name, xml, Dom)]
        self.sent = sent            # [(domain uuid, command)]
        self.stats = stats
        self.up = True

    def alive(self):
        return self.up

    def version(self):
        return '9.0.0'

    def close(self):
        self.up = False

    def running(self):
        if not self.up:
            raise RuntimeError('client socket is closed')
        return list(self.doms)

    def vm_stats(self):
        return self.stats

    def monitor(self, dom):
        sent = self.sent

        class Mon(tp.FakeMonitor):
            def gpa2hva(self, gpa):
                sent.append((dom.uuid, 'gpa2hva 0x%x' % gpa))
                return tp.FakeMonitor.gpa2hva(self, gpa)

            def vm_stats(self):
                sent.append((dom.uuid, 'query-stats'))
                return tp.FakeMonitor.vm_stats(self)
        return Mon(tp.HVA)


def two_vms(tmp_path):
    """A tagged KVM domain vm1 and an untagged one vm2 (same QEMU pid:
    the /proc tree of test_probes_vmreport)."""
    roots = vmreport.Roots(*(str(tmp_path / n) for n in ('proc', 'sys',
                                                         'run')),
                           configfs=str(tmp_path / 'cfs'))
    tp.tree(tmp_path)
    tp.write(roots.run_dir + '/vm2.pid', str(tp.PID))
    return roots, [('vm1', tp.XML % tp.cpus(), Dom('u', 1)),
                   ('vm2', UNTAGGED % tp.cpus(), Dom('u2', 2))]


def poller_over(roots, connect, monitor=True):
    from nova_tlbbalance import modclient

    def host_facts():
        return vmreport.host_facts(roots, modclient.Client(roots.configfs))
    poller = exporter.Poller(None, host_facts, connect, interval=0.05)

    def gather(conn, host):
        _, reps = vmreport.collect(
            roots, conn=conn, host=host, monitor=monitor, tagged_only=True,
            monitor_for=poller.monitor_for, domain_stats=True)
        return reps, {}
    poller.gather = gather
    return poller


def fams_of(snap):
    return {f.name: f for f in prom_parser.text_string_to_metric_families(
        snap.text())}


def value(fams, name, sample=None, **labels):
    got = [s.value for s in fams[name].samples
           if s.name == (sample or name) and s.labels == labels]
    assert len(got) == 1, (name, labels, fams[name].samples)
    return got[0]


def test_no_monitor_command_to_untagged_and_gpa2hva_once_per_start(
        tmp_path):
    """An untagged domain gets no monitor command at all (libvirt would
    mark it "custom-monitor" tainted); a tagged one gets its gpa2hva once
    per VM start, and KVM's statistics come from libvirt's domain
    statistics, never query-stats."""
    roots, doms = two_vms(tmp_path)
    sent = []
    stats = {'u': {'pages_4k': 10, 'pages_2m': 31},
             'u2': {'pages_4k': 7, 'pages_2m': 0}}
    poller = poller_over(roots, lambda: StandIn(doms, sent, stats))
    for _ in range(3):
        fams = fams_of(poller.collect_once())
    assert sent == [('u', 'gpa2hva 0x0')], sent
    assert value(fams, 'tlbbalance_up') == 1
    assert value(fams, 'tlbbalance_monitor_commands',
                 'tlbbalance_monitor_commands_total') == 1
    # stage 2 of both, from domain statistics
    assert value(fams, 'tlbbalance_vm_stage2_pages', vm='vm1', uuid='u',
                 size='pages_2m') == 31
    assert value(fams, 'tlbbalance_vm_stage2_pages', vm='vm2', uuid='u2',
                 size='pages_4k') == 7
    # the VM restarted: a new libvirt ID, asked once more
    doms[0] = ('vm1', doms[0][1], Dom('u', 9))
    poller.collect_once()
    poller.collect_once()
    assert sent == [('u', 'gpa2hva 0x0')] * 2, sent


def test_without_domain_stats_no_query_stats(tmp_path):
    """libvirt < 8.9 (no VIR_DOMAIN_STATS_VM): stage 2 is left out, not
    asked of QEMU at every collection."""
    roots, doms = two_vms(tmp_path)
    sent = []
    poller = poller_over(roots, lambda: StandIn(doms, sent, None))
    fams = fams_of(poller.collect_once())
    assert sent == [('u', 'gpa2hva 0x0')]
    assert 'tlbbalance_vm_stage2_pages' not in fams


def test_one_connection_reconnect_and_up_zero_while_libvirt_is_down(
        tmp_path):
    """Collections share one libvirt connection; while libvirt is down a
    scrape still has tlbbalance_up 0, build info and the host facts (it
    was a 503); the next collection after libvirt returns reconnects."""
    roots, doms = two_vms(tmp_path)
    state = {'down': False, 'conns': []}

    def connect():
        if state['down']:
            raise libvirt_conn.LibvirtUnavailable(
                'cannot connect to qemu:///system: refused')
        conn = StandIn(doms, [], {})
        state['conns'].append(conn)
        return conn
    poller = poller_over(roots, connect)
    for _ in range(4):
        poller.collect_once()
    assert len(state['conns']) == 1
    # libvirtd goes away: the open connection breaks
    state['down'] = True
    state['conns'][0].up = False
    fams = fams_of(poller.collect_once())
    assert value(fams, 'tlbbalance_up') == 0
    info = [s.labels for s in fams['tlbbalance_build_info'].samples]
    assert info[0]['version'] and info[0]['libvirt_version'] == '9.0.0'
    assert value(fams, 'tlbbalance_host_hpage_pmd_bytes') == 2 << 20
    assert value(fams, 'tlbbalance_collection_failures',
                 'tlbbalance_collection_failures_total') == 1
    assert 'tlbbalance_vm_managed' not in fams
    assert 'refused' in poller.state.error
    state['down'] = False
    fams = fams_of(poller.collect_once())
    assert value(fams, 'tlbbalance_up') == 1
    assert len(state['conns']) == 2
    assert value(fams, 'tlbbalance_libvirt_connections',
                 'tlbbalance_libvirt_connections_total') == 2
    assert value(fams, 'tlbbalance_vm_managed', vm='vm1', uuid='u') == 1


def test_background_thread_serves_the_last_collection(tmp_path):
    roots, doms = two_vms(tmp_path)
    poller = poller_over(roots, lambda: StandIn(doms, [], {}))
    poller.start()
    try:
        assert poller.ready.wait(30), 'no first collection in 30 s'
        first = poller.snapshot
        # a new one every interval (0.05 s), bounded wait
        end = time.monotonic() + 30
        while poller.snapshot is first and time.monotonic() < end:
            time.sleep(0.02)
        assert poller.snapshot is not first
        assert poller.state.connections == 1
    finally:
        poller.stop()


# --- the HTTP server, real sockets ---------------------------------------

def snapshot(extra=0):
    fams = exporter.self_families(exporter.SelfState(up=True,
                                                     version='0.1.0'))
    for i in range(extra):
        fam = exporter.core.GaugeMetricFamily('tlbbalance_x%d' % i, 'x')
        fam.add_metric([], i)
        fams.append(fam)
    return exporter.Snapshot(fams, time.time())


class Running:
    """exporter_http.Server in a thread of its own, on a free port."""

    def __init__(self, snap=None, host='127.0.0.1', **kw):
        self.snap = snap if snap is not None else snapshot()
        self.srv = exporter_http.Server(lambda: self.snap, host, 0, **kw)
        self.addr = self.srv.bind()
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.started.wait(30)

    def _run(self):
        import asyncio
        self.loop = asyncio.new_event_loop()
        try:
            self.loop.run_until_complete(self.srv.serve(self.started.set))
        except BaseException:
            pass

    def stop(self):
        self.loop.call_soon_threadsafe(self.srv.close)
        self.thread.join(10)
        self.srv.sockets[0].close()

    def get(self, path='/metrics', headers=None, timeout=10, context=None):
        if context is not None:
            c = http.client.HTTPSConnection(self.addr[0], self.addr[1],
                                            timeout=timeout, context=context)
        else:
            c = http.client.HTTPConnection(self.addr[0], self.addr[1],
                                           timeout=timeout)
        try:
            c.request('GET', path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()


@pytest.fixture
def server():
    started = []

    def make(*a, **kw):
        started.append(Running(*a, **kw))
        return started[-1]
    yield make
    for s in started:
        s.stop()


def test_scrape_answers_formats_and_paths(server):
    s = server()
    status, headers, body = s.get()
    assert status == 200
    assert headers['Content-Type'].startswith('text/plain; version=0.0.4')
    assert b'tlbbalance_up 1.0' in body
    status, headers, body = s.get(headers={
        'Accept': 'application/openmetrics-text; version=1.0.0',
        'Accept-Encoding': 'gzip'})
    assert headers['Content-Type'].startswith('application/openmetrics-text')
    assert headers['Content-Encoding'] == 'gzip'
    assert gzip.decompress(body).endswith(b'# EOF\n')
    assert s.get('/nothing')[0] == 404
    c = http.client.HTTPConnection(*s.addr, timeout=10)
    c.request('POST', '/metrics', body=b'')
    assert c.getresponse().status == 405
    c.close()


def test_scrape_before_the_first_collection_waits_bounded(server):
    s = server(snap=None)
    s.snap = None
    s.srv.first_wait = 0.3
    status, headers, _ = s.get()
    assert status == 503 and headers['Retry-After'] == '5'


def _idle(addr, n):
    socks = []
    for _ in range(n):
        sock = socket.create_connection(addr[:2], timeout=10)
        sock.sendall(b'GET /metrics HTTP/1.1\r\n')    # never finished
        socks.append(sock)
    return socks


def test_idle_connections_neither_block_a_scrape_nor_spin(server):
    """300 idle connections (a request head never finished): a scrape is
    still answered at once, and the exporter does not burn CPU over them
    (it spun at 40 % and every scrape timed out, with 256)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft > 700, 'open-file limit %d too low for this test' % soft
    s = server(snap=snapshot(200), max_connections=1000, timeout=30)
    socks = _idle(s.addr, 300)
    try:
        cpu0 = time.process_time()
        t0 = time.monotonic()
        status, _, body = s.get(timeout=10)
        took = time.monotonic() - t0
        assert status == 200 and b'tlbbalance_x199' in body
        assert took < 5, took
        time.sleep(1.0)
        # this process runs the server and the test: well under 40 %
        assert time.process_time() - cpu0 < 0.3
        assert len(s.srv.conns) >= 300
    finally:
        for sock in socks:
            sock.close()


def test_at_the_bound_the_longest_idle_connection_goes(server):
    s = server(max_connections=20, timeout=30)
    socks = _idle(s.addr, 40)
    try:
        status, _, _ = s.get(timeout=10)
        assert status == 200
        assert s.srv.stats['evicted'] >= 21
        assert len(s.srv.conns) <= 20
        # the oldest were closed: reading gives EOF or a reset
        socks[0].settimeout(10)
        try:
            assert socks[0].recv(100) == b''
        except ConnectionResetError:
            pass
    finally:
        for sock in socks:
            sock.close()


def test_a_silent_connection_is_closed_after_the_timeout(server):
    s = server(timeout=0.5)
    sock = socket.create_connection(s.addr[:2], timeout=10)
    try:
        t0 = time.monotonic()
        try:
            assert sock.recv(100) == b''
        except ConnectionResetError:
            pass
        assert 0.4 < time.monotonic() - t0 < 8
    finally:
        sock.close()
    assert s.srv.stats['timeouts'] == 1


def test_head_too_large_and_body_refused(server):
    s = server()
    sock = socket.create_connection(s.addr[:2], timeout=10)
    sock.sendall(b'GET /metrics HTTP/1.1\r\nX: ' + b'a' * 20000)
    assert b' 431 ' in sock.recv(200)
    sock.close()
    c = http.client.HTTPConnection(*s.addr, timeout=10)
    c.request('GET', '/metrics', body=b'x' * 10)
    assert c.getresponse().status == 400
    c.close()


def test_listen_ipv6_loopback(server):
    s = server(host='::1')
    assert s.srv.url().startswith('http://[::1]:')
    assert s.get()[0] == 200


def make_cert(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'localhost')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName('localhost')]), critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / 'tls.crt').write_bytes(
        cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / 'tls.key').write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return str(tmp_path / 'tls.crt')


def basic(user, password):
    return {'Authorization': 'Basic ' + base64.b64encode(
        ('%s:%s' % (user, password)).encode()).decode()}


def test_tls_and_basic_auth_from_a_web_config_file(server, tmp_path):
    cert = make_cert(tmp_path)
    # Go's htpasswd writes $2y$: accepted as well as $2b$
    hashed = bcrypt.hashpw(b'secret', bcrypt.gensalt(4)).decode()
    hashed = '$2y$' + hashed[4:]
    cfg = tmp_path / 'web.yml'
    cfg.write_text('tls_server_config:\n  cert_file: tls.crt\n'
                   '  key_file: tls.key\nbasic_auth_users:\n'
                   '  prometheus: %s\n' % hashed)
    web = exporter_http.WebConfig.load(str(cfg))
    s = server(web=web)
    assert s.srv.url().startswith('https://127.0.0.1:')
    ctx = ssl.create_default_context(cafile=cert)
    ctx.check_hostname = False
    assert s.get(context=ctx)[0] == 401
    status, headers, _ = s.get(context=ctx,
                               headers=basic('prometheus', 'wrong'))
    assert status == 401
    assert headers['WWW-Authenticate'] == 'Basic realm="tlbbalance"'
    assert s.get(context=ctx, headers=basic('nobody', 'secret'))[0] == 401
    status, _, body = s.get(context=ctx,
                            headers=basic('prometheus', 'secret'))
    assert status == 200 and b'tlbbalance_up' in body
    # plain HTTP on the TLS port gets nothing
    with pytest.raises((http.client.HTTPException, ConnectionError,
                        socket.timeout)):
        s.get(timeout=3)
    # a TLS client that never handshakes is dropped after the timeout
    s.srv.timeout = 0.5
    sock = socket.create_connection(s.addr[:2], timeout=10)
    try:
        assert sock.recv(10) == b''
    except ConnectionResetError:
        pass
    sock.close()


@pytest.mark.parametrize('text,error', [
    ('tls_server_config:\n  cert_file: x.crt\n',
     'tls_server_config: key_file is required'),
    ('tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n',
     'x.crt'),
    ('basic_auth_users:\n  alice: plaintext\n',
     'basic_auth_users: alice: not a bcrypt hash'),
    ('tls_config: {}\n', "unknown key(s) tls_config"),
    ('tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n'
     '  client_auth_type: RequireAndVerifyClientCert\n',
     'needs client_ca_file'),
    ('- a\n', 'expected a mapping'),
])
def test_web_config_errors_name_file_and_key(tmp_path, text, error):
    make_cert(tmp_path)
    cfg = tmp_path / 'web.yml'
    cfg.write_text(text)
    with pytest.raises(exporter_http.ConfigError) as exc:
        exporter_http.WebConfig.load(str(cfg))
    assert str(cfg) in str(exc.value) and error in str(exc.value), exc.value


def run_cli(*args, timeout=60):
    env = dict(os.environ, PYTHONPATH=TOP)
    return subprocess.run([sys.executable, '-m', 'nova_tlbbalance',
                           'exporter'] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.parametrize('args,error', [
    (['--port', '70000'], "argument --port: '70000' is not a TCP port"),
    (['--port', 'http'], "argument --port: 'http' is not a TCP port"),
    (['--listen', 'a b'], "argument --listen: 'a b' is not an address"),
    (['--listen', 'no-such-host.invalid'],
     '--listen no-such-host.invalid: not an address of this host'),
    (['--listen', '192.0.2.1'],
     'cannot listen on 192.0.2.1 port 9788: Cannot assign requested'),
    (['--interval', '0'], "argument --interval: '0': expected a number"),
    (['--web-config', '/nonexistent/web.yml'],
     'web config /nonexistent/web.yml: No such file or directory'),
    (['--user', 'no-such-user'], '--user no-such-user: no such user'),
    (['--user', 'root'], '--user root: that is root'),
])
def test_bad_options_give_a_clear_error_not_a_traceback(args, error):
    p = run_cli('--uri', 'test:///default', *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert error in p.stderr, p.stderr
    assert 'Traceback' not in p.stderr


def test_port_in_use_is_named():
    busy = socket.socket()
    busy.bind(('127.0.0.1', 0))
    busy.listen(1)
    try:
        port = busy.getsockname()[1]
        p = run_cli('--uri', 'test:///default', '--port', str(port))
        assert p.returncode == 2
        assert ('cannot listen on 127.0.0.1 port %d: Address already in use'
                % port) in p.stderr, p.stderr
    finally:
        busy.close()


def test_listen_option_takes_bracketed_ipv6():
    assert cli_exporter.listen_address('[::1]') == '::1'
    assert cli_exporter.listen_address('::1') == '::1'


def test_300_idle_connections_under_a_256_file_limit(tmp_path):
    """The issue's setting: the real command under a 256-file limit, 300
    idle connections. The longest idle ones are closed to make room
    (--max-connections defaults to 192 there) and a scrape is answered
    at once; before, every scrape timed out. libvirt is a URI nothing
    answers (tlbbalance_up 0): the server is what is tested."""
    env = dict(os.environ, PYTHONPATH=TOP)
    err = open(tmp_path / 'err', 'w+')
    p = subprocess.Popen(
        [shutil.which('prlimit'), '--nofile=256:256', '--',
         sys.executable, '-m', 'nova_tlbbalance', 'exporter', '--port', '0',
         '--uri', 'qemu+unix:///system?socket=%s' % (tmp_path / 'none')],
        stderr=err, env=env)
    try:
        def url():
            err.seek(0)
            m = re.search(r'on http://([0-9.]+):([0-9]+)/', err.read())
            assert p.poll() is None, err.read()
            return m and (m.group(1), int(m.group(2)))
        addr = wait_until('the exporter listening', url, 60, 0.05)
        socks = _idle(addr, 300)
        try:
            time.sleep(0.5)
            c = http.client.HTTPConnection(*addr, timeout=10)
            t0 = time.monotonic()
            c.request('GET', '/metrics')
            r = c.getresponse()
            body = r.read()
            took = time.monotonic() - t0
            c.close()
            assert r.status == 200 and b'tlbbalance_up 0.0' in body
            # Answered, not queued behind the idle ones until they time
            # out (the defect: every scrape ran into the client's 10 s).
            # A bound, not a figure: at load 16 one took over 0.5 s; the
            # figures are tools/bench/exporter_vms.py's.
            assert took < 5, took
        finally:
            for sock in socks:
                sock.close()
        err.seek(0)
        assert 'out of system resource' not in err.read()
    finally:
        p.terminate()
        p.wait(10)
        err.close()


class ServedAsNobody:
    """``tlbbalance exporter --user nobody`` as a subprocess, libvirt
    unreachable: the root collector (``proc``), its HTTP server child
    (``child``) and where it listens (``host``, ``port``). Its stderr is
    read on in a thread (the collector says at each collection that
    libvirt is unreachable: no write waits on a full pipe); ``stop()``
    ends it and fails the test, with where each thread waited, if it
    does not end."""

    def __init__(self):
        assert os.geteuid() == 0, 'run as root, as the project tests do'
        env = dict(os.environ, PYTHONPATH=TOP)
        # -X faulthandler: a process that does not end is sent SIGABRT
        # by stop() and says where each of its threads waits.
        self.proc = subprocess.Popen(
            [sys.executable, '-X', 'faulthandler', '-m', 'nova_tlbbalance',
             'exporter', '--port', '0',
             '--user', 'nobody', '--interval', '0.2',
             '--uri', 'qemu+unix:///system?socket=/nonexistent'],
            stderr=subprocess.PIPE, text=True, env=env)
        self.err = []
        self.child = None
        self._drain = None
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self):
        # The collector may log first (e.g. that libvirt-python cannot be
        # imported, in an environment without it): read up to the line
        # that says where the exporter listens (at most 20 lines).
        m = None
        while not m and len(self.err) < 20:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.err.append(line)
            m = re.search(r'on http://([0-9.]+):([0-9]+)/metrics \(served '
                          r'as nobody\)', line)
        assert m, ''.join(self.err)
        self.host, self.port = m.group(1), int(m.group(2))
        self._drain = threading.Thread(
            target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self._drain.start()
        pid = self.proc.pid
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            kids = [int(k) for k in f.read().split()]
        assert len(kids) == 1, kids
        self.child = kids[0]

    def stderr(self):
        if self._drain is not None:
            self._drain.join(5)
        return ''.join(self.err[-200:])

    def stop(self, sig=signal.SIGTERM, secs=30):
        """Send sig to the collector (None: send nothing) and wait for
        both processes; returns the collector's exit status."""
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            # Both end within a second here; 30 s: a loaded machine.
            rc = self.proc.wait(secs)
            wait_until('the server child gone',
                       lambda: self.child is None
                       or not os.path.exists('/proc/%d' % self.child),
                       secs, 0.05)
            return rc
        except (subprocess.TimeoutExpired, WaitTimeout):
            for pid in (self.proc.pid, self.child):
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
            self.proc.kill()
            pytest.fail('the exporter did not end %d s after %s; its '
                        'threads when sent SIGABRT:\n%s'
                        % (secs, sig and sig.name, self.stderr()))


def test_http_served_by_an_unprivileged_child():
    """--user: the process that parses requests from the network runs as
    that user; the collector stays root (it reads other users' /proc
    and libvirt's socket). Ending the parent ends the child."""
    ex = ServedAsNobody()
    try:
        c = http.client.HTTPConnection(ex.host, ex.port, timeout=10)

        def collections():
            c.request('GET', '/metrics')
            body = c.getresponse().read().decode()
            got = re.search(r'^tlbbalance_collections_total (\S+)$', body,
                            re.M)
            return got and float(got.group(1)) >= 2
        wait_until('two collections through the pipe', collections, 30,
                   0.1)
        c.close()

        def uid(pid):
            with open('/proc/%d/status' % pid) as f:
                line = [ln for ln in f if ln.startswith('Uid:')][0]
            return {int(u) for u in line.split()[1:]}
        assert uid(ex.child) == {65534} and uid(ex.proc.pid) == {0}
    finally:
        ex.stop()


def test_collector_killed_ends_the_server_child():
    """The collector killed outright (no cleanup of its own): the child
    reads the end of the pipe and closes its server through its event
    loop (call_soon_threadsafe from the reader thread), then exits."""
    ex = ServedAsNobody()
    ex.stop(signal.SIGKILL)


def test_server_child_terminated_ends_the_collector():
    """The HTTP server child ends on its own (SIGTERM to it alone): the
    collector sees it gone, whether first through a broken pipe or
    through waitpid, says so and exits with status 2 rather than collect
    for nobody (it used to take the broken pipe for a clean stop: 0)."""
    ex = ServedAsNobody()
    os.kill(ex.child, signal.SIGTERM)
    rc = ex.stop(None)
    assert rc == 2, (rc, ex.stderr())
    assert 'the HTTP server process ended' in ex.stderr(), ex.stderr()
