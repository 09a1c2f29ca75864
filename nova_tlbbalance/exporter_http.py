# SPDX-License-Identifier: Apache-2.0
"""The exporter's HTTP(S) server: scrapes served from the last collection.

One asyncio event loop serves every connection: an idle or slow client
costs a socket, not a thread, so idle connections neither block scrapes
nor spin the CPU. Each connection has a deadline for its request head,
its TLS handshake and each write (``timeout``); at most
``max_connections`` are open, and when a new one arrives at that bound
the one idle the longest (waiting for a request) is closed to make room.
The answer is bytes rendered once per collection (exporter.Snapshot), so
a scrape costs no libvirt call and no rendering.

TLS and basic authentication follow the Prometheus exporter-toolkit's
web configuration file (``--web-config``)::

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      # client_auth_type: RequireAndVerifyClientCert
      # client_ca_file: ca.crt
      # min_version: TLS12
    basic_auth_users:
      prometheus: $2y$10$...      # bcrypt hash (htpasswd -nBC 10 "")

Relative paths are relative to the file. A bcrypt check is slow by
design: a checked (user, password) pair is remembered (its SHA-256, not
the password) so a scrape every 15 s does not pay it each time, and the
checks run in a small thread pool off the event loop.
"""

import asyncio
import base64
import errno
import hashlib
import os
import socket
import ssl
import sys

import yaml

WEB_CONFIG_KEYS = {'tls_server_config', 'basic_auth_users',
                   'http_server_config'}
TLS_KEYS = {'cert_file', 'key_file', 'client_auth_type', 'client_ca_file',
            'min_version', 'max_version'}
CLIENT_AUTH = {
    'NoClientCert': ssl.CERT_NONE,
    'RequestClientCert': ssl.CERT_OPTIONAL,
    'VerifyClientCertIfGiven': ssl.CERT_OPTIONAL,
    'RequireAndVerifyClientCert': ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {'TLS12': ssl.TLSVersion.TLSv1_2,
                'TLS13': ssl.TLSVersion.TLSv1_3}
PATHS = ('/metrics', '/')
MAX_HEAD = 8192
BACKLOG = 1024
ACCEPT_BATCH = 8
# file descriptors kept for what is not a client: the libvirt connection,
# /proc and configfs reads of a collection, the log
FD_RESERVE = 64
REALM = 'tlbbalance'


class ConfigError(Exception):
    """A web configuration file that cannot be used; names the file and
    the key."""


class WebConfig:
    """A parsed exporter-toolkit web configuration: ``ssl_context`` (or
    None) and ``users`` ({name: bcrypt hash}, empty: no authentication)."""

    def __init__(self, ssl_context=None, users=None):
        self.ssl_context = ssl_context
        self.users = users or {}

    @classmethod
    def load(cls, path):
        def bad(what):
            return ConfigError('web config %s: %s' % (path, what))
        try:
            with open(path) as f:
                data = yaml.safe_load(f)
        except OSError as exc:
            raise bad(exc.strerror or str(exc)) from None
        except yaml.YAMLError as exc:
            raise bad('not YAML: %s' % exc) from None
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise bad('expected a mapping at the top')
        unknown = set(data) - WEB_CONFIG_KEYS
        if unknown:
            raise bad('unknown key(s) %s (known: %s)' % (
                ', '.join(sorted(map(str, unknown))),
                ', '.join(sorted(WEB_CONFIG_KEYS))))
        base = os.path.dirname(os.path.abspath(path))
        ctx = None
        tls = data.get('tls_server_config')
        if tls is not None:
            ctx = _ssl_context(tls, base, bad)
        users = data.get('basic_auth_users') or {}
        if not isinstance(users, dict):
            raise bad('basic_auth_users: expected a mapping of user name '
                      'to bcrypt hash')
        for user, hashed in users.items():
            if not isinstance(hashed, str) or not hashed.startswith(
                    ('$2a$', '$2b$', '$2y$')):
                raise bad('basic_auth_users: %s: not a bcrypt hash ($2a$, '
                          '$2b$ or $2y$...); make one with htpasswd -nBC 10 '
                          '""' % user)
            if ':' in str(user):
                raise bad('basic_auth_users: %r: a user name cannot hold '
                          '":"' % user)
        if users:
            import bcrypt   # noqa: F401  (fail here, not at a scrape)
        return cls(ctx, {str(u): h for u, h in users.items()})


def _ssl_context(tls, base, bad):
    if not isinstance(tls, dict):
        raise bad('tls_server_config: expected a mapping')
    unknown = set(tls) - TLS_KEYS
    if unknown:
        raise bad('tls_server_config: unknown key(s) %s (known: %s)' % (
            ', '.join(sorted(map(str, unknown))), ', '.join(sorted(TLS_KEYS))))
    for key in ('cert_file', 'key_file'):
        if not tls.get(key):
            raise bad('tls_server_config: %s is required' % key)
    if not hasattr(asyncio.StreamWriter, 'start_tls'):
        raise bad('tls_server_config: TLS needs Python >= 3.11 (this is '
                  '%d.%d)' % sys.version_info[:2])

    def path(key):
        return os.path.join(base, str(tls[key]))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.minimum_version = TLS_VERSIONS[tls.get('min_version', 'TLS12')]
        if 'max_version' in tls:
            ctx.maximum_version = TLS_VERSIONS[tls['max_version']]
    except KeyError as exc:
        raise bad('tls_server_config: TLS version %s: one of %s'
                  % (exc, ', '.join(TLS_VERSIONS))) from None
    try:
        ctx.load_cert_chain(path('cert_file'), path('key_file'))
    except (OSError, ssl.SSLError) as exc:
        raise bad('tls_server_config: cert_file %s / key_file %s: %s'
                  % (path('cert_file'), path('key_file'), exc)) from None
    mode = tls.get('client_auth_type', 'NoClientCert')
    if mode not in CLIENT_AUTH:
        raise bad('tls_server_config: client_auth_type %r: one of %s'
                  % (mode, ', '.join(CLIENT_AUTH)))
    ctx.verify_mode = CLIENT_AUTH[mode]
    if 'client_ca_file' in tls:
        try:
            ctx.load_verify_locations(path('client_ca_file'))
        except (OSError, ssl.SSLError) as exc:
            raise bad('tls_server_config: client_ca_file %s: %s'
                      % (path('client_ca_file'), exc)) from None
    elif ctx.verify_mode != ssl.CERT_NONE:
        raise bad('tls_server_config: client_auth_type %s needs '
                  'client_ca_file' % mode)
    return ctx


class Auth:
    """Basic authentication against bcrypt hashes, with the checked pairs
    remembered by their SHA-256 (exporter-toolkit does likewise)."""

    def __init__(self, users):
        import concurrent.futures
        self.users = users
        self.good = set()
        self.pool = concurrent.futures.ThreadPoolExecutor(
            2, thread_name_prefix='bcrypt')

    def _check(self, user, password):
        import bcrypt
        hashed = self.users[user].encode()
        # Go's bcrypt writes $2y$ too; the algorithm is $2b$'s
        if hashed.startswith(b'$2y$'):
            hashed = b'$2b$' + hashed[4:]
        try:
            return bcrypt.checkpw(password.encode(), hashed)
        except ValueError:
            return False

    async def allowed(self, header):
        if not self.users:
            return True
        if not header or not header.lower().startswith('basic '):
            return False
        try:
            user, _, password = base64.b64decode(
                header[6:].strip(), validate=True).decode().partition(':')
        except (ValueError, UnicodeDecodeError):
            return False
        if user not in self.users:
            return False
        key = hashlib.sha256(('%s\0%s\0%s' % (
            user, password, self.users[user])).encode()).digest()
        if key in self.good:
            return True
        ok = await asyncio.get_running_loop().run_in_executor(
            self.pool, self._check, user, password)
        if ok:
            self.good.add(key)
        return ok


class _Protocol(asyncio.StreamReaderProtocol):
    """A stream protocol that tells the server when its socket closed."""

    def __init__(self, server):
        super().__init__(asyncio.StreamReader(limit=MAX_HEAD),
                         server._accepted)
        self._server = server
        self._counted = True

    def connection_lost(self, exc):
        if self._counted:
            self._counted = False
            self._server._closed_one()
        super().connection_lost(exc)


def _deadline(seconds):
    """``async with``: TimeoutError after ``seconds``."""
    if hasattr(asyncio, 'timeout'):         # Python >= 3.11
        return asyncio.timeout(seconds)
    return _WaitFor(seconds)


class _WaitFor:
    """asyncio.timeout for Python 3.10: cancels the task at the deadline
    and turns that into TimeoutError."""

    def __init__(self, seconds):
        self.seconds = seconds

    async def __aenter__(self):
        task = asyncio.current_task()
        self.expired = False

        def expire():
            self.expired = True
            task.cancel()
        self.handle = asyncio.get_running_loop().call_later(self.seconds,
                                                            expire)

    async def __aexit__(self, typ, exc, tb):
        self.handle.cancel()
        if self.expired and typ is asyncio.CancelledError:
            raise asyncio.TimeoutError() from None
        return False


class Server:
    """Serves ``snapshot()`` (an exporter.Snapshot, or None before the
    first collection) on ``host``:``port``."""

    def __init__(self, snapshot, host='127.0.0.1', port=9788, web=None,
                 max_connections=512, timeout=10.0, first_wait=None):
        self.snapshot = snapshot
        self.host = host
        self.port = port
        self.web = web or WebConfig()
        self.auth = Auth(self.web.users)
        self.max_connections = max_connections
        self.timeout = timeout
        # how long a scrape waits for the first collection
        self.first_wait = timeout if first_wait is None else first_wait
        self.conns = {}     # handler task -> [idle since, evicted]
        self.open = 0       # accepted sockets not closed yet
        self.closing = 0    # evicted, not closed yet
        self.stats = {'accepted': 0, 'evicted': 0, 'timeouts': 0}
        self.loop = None
        self.sockets = []
        self._reading = False
        self._done = None

    @property
    def scheme(self):
        return 'https' if self.web.ssl_context else 'http'

    def bind(self):
        """Listen now (errors here, before any collection): returns the
        bound (address, port)."""
        infos = socket.getaddrinfo(self.host or None, self.port,
                                   type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        family, _, _, _, addr = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                # "::" is every address, IPv4 too (as Go's ":port")
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY,
                                int(addr[0] != '::'))
            sock.bind(addr)
            sock.listen(BACKLOG)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sockets = [sock]
        return sock.getsockname()[:2]

    def url(self):
        addr, port = self.sockets[0].getsockname()[:2]
        if ':' in addr:
            addr = '[%s]' % addr
        return '%s://%s:%d/metrics' % (self.scheme, addr, port)

    async def serve(self, started=None):
        """Accept and serve until :meth:`close`."""
        self.loop = asyncio.get_running_loop()
        self._done = self.loop.create_future()
        self._resume()
        if started is not None:
            started()
        await self._done

    def close(self):
        """Stop accepting and close every connection (loop thread)."""
        self._pause()
        for task in list(self.conns):
            task.cancel()
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _pause(self):
        if self._reading:
            self.loop.remove_reader(self.sockets[0].fileno())
            self._reading = False

    def _resume(self):
        if not self._reading:
            self.loop.add_reader(self.sockets[0].fileno(), self._readable)
            self._reading = True

    def _readable(self):
        """The listening socket has connections waiting. Each accepted
        socket counts until its transport is closed (``open``), so the
        bound holds for file descriptors, not only for handlers: at the
        bound the longest idle connection is closed and accepting pauses
        until a socket is actually closed (no busy loop on a listening
        socket that stays readable)."""
        for _ in range(ACCEPT_BATCH):
            if self.open >= self.max_connections:
                self._pause()
                if not self._make_room() and not self.closing:
                    # every connection is busy or not started yet: look
                    # again shortly (a close resumes sooner)
                    self.loop.call_later(0.1, self._retry)
                return
            try:
                sock, _ = self.sockets[0].accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE,
                                     errno.ENOBUFS, errno.ENOMEM):
                    log('accept: %s' % exc)
                    return
                # out of descriptors below our own bound (a lower limit
                # than we were told): make room, wait for a close
                self._pause()
                if not self._make_room() and not self.closing:
                    self.loop.call_later(0.1, self._retry)
                return
            self.open += 1
            self.stats['accepted'] += 1
            sock.setblocking(False)
            self.loop.create_task(self._attach(sock))

    def _retry(self):
        if self._done is not None and not self._done.done():
            self._resume()

    async def _attach(self, sock):
        try:
            await self.loop.connect_accepted_socket(
                lambda: _Protocol(self), sock)
        except Exception:
            sock.close()
            self._closed_one()

    def _closed_one(self):
        self.open -= 1
        if self.open < self.max_connections and self._done is not None \
                and not self._done.done():
            self._resume()

    def _make_room(self):
        """At the bound, close the connection idle the longest; nothing
        when one is being closed already."""
        if self.closing:
            return False
        idle = [(since[0], task) for task, since in self.conns.items()
                if since[0] is not None]
        if not idle:
            return False
        task = min(idle, key=lambda t: t[0])[1]
        self.stats['evicted'] += 1
        self.closing += 1
        self.conns[task][1] = True
        task.cancel()
        return True

    async def _accepted(self, reader, writer):
        task = asyncio.current_task()
        # [idle since (loop time) or None while answering, evicted]
        state = [self.loop.time(), False]
        self.conns[task] = state
        try:
            if self.web.ssl_context is not None:
                await writer.start_tls(
                    self.web.ssl_context,
                    ssl_handshake_timeout=self.timeout)
            while True:
                state[0] = self.loop.time()
                async with _deadline(self.timeout):
                    head = await reader.readuntil(b'\r\n\r\n')
                state[0] = None
                keep = await self._request(head, writer)
                if not keep:
                    break
            writer.close()
        except asyncio.TimeoutError:
            self.stats['timeouts'] += 1
            writer.transport.abort()
        except asyncio.LimitOverrunError:
            try:
                await self._send_simple(writer, 431,
                                        'request head too large\n', False)
            except (asyncio.TimeoutError, OSError):
                pass
            writer.transport.abort()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError,
                OSError, asyncio.CancelledError):
            writer.transport.abort()
        finally:
            if state[1]:
                self.closing -= 1
            self.conns.pop(task, None)

    async def _write(self, writer, data):
        writer.write(data)
        async with _deadline(self.timeout):
            await writer.drain()

    async def _send_simple(self, writer, code, text, keep, extra=()):
        body = text.encode()
        await self._respond(writer, code, 'text/plain; charset=utf-8', body,
                            keep, extra)

    async def _respond(self, writer, code, ctype, body, keep, extra=(),
                       head_only=False):
        reason = {200: 'OK', 400: 'Bad Request', 401: 'Unauthorized',
                  404: 'Not Found', 405: 'Method Not Allowed',
                  431: 'Request Header Fields Too Large',
                  503: 'Service Unavailable'}[code]
        lines = ['HTTP/1.1 %d %s' % (code, reason),
                 'Content-Type: %s' % ctype,
                 'Content-Length: %d' % len(body),
                 'Connection: %s' % ('keep-alive' if keep else 'close')]
        lines.extend(extra)
        data = ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')
        await self._write(writer, data if head_only else data + body)

    async def _request(self, head, writer):
        """Answers one request; True to keep the connection open."""
        try:
            text = head.decode('latin-1')
            request_line, *header_lines = text[:-4].split('\r\n')
            method, target, version = request_line.split(' ')
            headers = {}
            for line in header_lines:
                name, sep, value = line.partition(':')
                if not sep or not name or name != name.strip():
                    raise ValueError(line)
                headers[name.lower()] = value.strip()
        except ValueError:
            await self._send_simple(writer, 400, 'bad request\n', False)
            return False
        if version not in ('HTTP/1.1', 'HTTP/1.0'):
            await self._send_simple(writer, 400, 'bad HTTP version\n', False)
            return False
        conn_hdr = headers.get('connection', '').lower()
        keep = (version == 'HTTP/1.1' and 'close' not in conn_hdr) or \
            (version == 'HTTP/1.0' and 'keep-alive' in conn_hdr)
        if 'transfer-encoding' in headers or \
                headers.get('content-length', '0') != '0':
            # a scrape has no body; one we would have to skip is refused
            await self._send_simple(writer, 400, 'no request body here\n',
                                    False)
            return False
        if not await self.auth.allowed(headers.get('authorization')):
            await self._send_simple(
                writer, 401, 'Unauthorized\n', keep,
                ['WWW-Authenticate: Basic realm="%s"' % REALM])
            return keep
        if method not in ('GET', 'HEAD'):
            await self._send_simple(writer, 405, 'only GET here\n', keep,
                                    ['Allow: GET, HEAD'])
            return keep
        path = target.split('?', 1)[0]
        if path not in PATHS:
            await self._send_simple(writer, 404, 'only /metrics here\n',
                                    keep)
            return keep
        snap = self.snapshot()
        if snap is None:
            snap = await self._first_snapshot()
        if snap is None:
            await self._send_simple(
                writer, 503, 'the first collection has not finished\n',
                keep, ['Retry-After: 5'])
            return keep
        om = 'application/openmetrics-text' in headers.get('accept', '')
        gz = 'gzip' in headers.get('accept-encoding', '')
        ctype, body = snap.body(om, gz)
        extra = ['Content-Encoding: gzip'] if gz else []
        await self._respond(writer, 200, ctype, body, keep, extra,
                            head_only=(method == 'HEAD'))
        return keep

    async def _first_snapshot(self):
        end = self.loop.time() + self.first_wait
        while self.loop.time() < end:
            snap = self.snapshot()
            if snap is not None:
                return snap
            await asyncio.sleep(0.05)
        return self.snapshot()


def raise_nofile():
    """Raise the soft open-file limit to the hard one (what Go programs do
    at start); returns the soft limit now."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


def default_max_connections():
    """Below the open-file limit, with room for libvirt, /proc reads and
    the log."""
    return max(16, min(1024, raise_nofile() - FD_RESERVE))


def log(msg):
    sys.stderr.write('tlbbalance exporter: %s\n' % msg)
    sys.stderr.flush()
