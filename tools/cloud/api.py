# SPDX-License-Identifier: Apache-2.0
"""A few REST calls to the cloud's own APIs (standard library only).

Used to bootstrap the cloud (service users, endpoints, images, flavors)
and to wait for it to be ready: a process per ``openstack`` command costs
1-2 s of interpreter start each on this machine.
"""

import json
import urllib.error
import urllib.request

import procs  # its wait_until (tlbbwait)


class ApiError(Exception):
    def __init__(self, method, url, status, body):
        self.status = status
        self.body = body
        super().__init__('%s %s: HTTP %s: %s' % (method, url, status,
                                                 body[:800]))


class Client:
    """Password auth against keystone v3, project scoped."""

    def __init__(self, auth_url, password, user='admin', project='admin',
                 timeout=60):
        self.auth_url = auth_url
        self.user = user
        self.password = password
        self.project = project
        self.timeout = timeout
        self.token = None
        self.catalog = {}

    def authenticate(self):
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': self.user, 'domain': {'id': 'default'},
                'password': self.password}}},
            'scope': {'project': {'name': self.project,
                                  'domain': {'id': 'default'}}}}}
        req = urllib.request.Request(
            self.auth_url + '/auth/tokens', method='POST',
            data=json.dumps(body).encode(),
            headers={'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=self.timeout) as r:
            self.token = r.headers['X-Subject-Token']
            tok = json.load(r)['token']
        self.catalog = {}
        for svc in tok.get('catalog', []):
            for ep in svc['endpoints']:
                if ep['interface'] == 'public':
                    self.catalog[svc['type']] = ep['url'].rstrip('/')
        return self

    def request(self, method, url, body=None, headers=None, raw=None,
                ok=(200, 201, 202, 204)):
        if not url.startswith('http'):
            svc, _, path = url.partition(':')
            url = self.catalog[svc] + path
        hdrs = {'X-Auth-Token': self.token or ''}
        data = None
        if raw is not None:
            data = raw
            hdrs['Content-Type'] = 'application/octet-stream'
        elif body is not None:
            data = json.dumps(body).encode()
            hdrs['Content-Type'] = 'application/json'
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method,
                                     headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                text = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            text = e.read()
            status = e.code
        if status not in ok:
            raise ApiError(method, url, status,
                           text.decode(errors='replace'))
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            return {'raw': text}

    def get(self, url, **kw):
        return self.request('GET', url, **kw)

    def post(self, url, body=None, **kw):
        return self.request('POST', url, body, **kw)

    def put(self, url, body=None, **kw):
        return self.request('PUT', url, body, **kw)

    def delete(self, url, **kw):
        return self.request('DELETE', url, **kw)


def reachable(url, timeout=5):
    """True once an HTTP server answers at url (any status)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def wait_server_status(client, server_id, want, timeout, fail=('ERROR',),
                       interval=0.5):
    """Poll a server until its status is ``want``; the server dict."""
    last = {}

    def status():
        last.update(client.get('compute:/servers/%s' % server_id)['server'])
        if last['status'] in fail:
            raise RuntimeError('server %s went to %s: %s'
                               % (server_id, last['status'],
                                  last.get('fault')))
        return dict(last) if last['status'] == want else None
    try:
        return procs.wait_until('server %s is %s' % (server_id, want),
                                status, timeout, interval)
    except procs.WaitTimeout as e:
        raise RuntimeError('%s (status still %s)' % (e, last.get('status')))
