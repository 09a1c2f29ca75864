"""``tlbbalance exporter``: Prometheus metrics on a loopback port.

The exposition (text 0.0.4, or OpenMetrics when the scraper asks for it)
and the HTTP server come from prometheus_client; what is measured and how
it is named is nova_tlbbalance.exporter's. Both are imported only when
this command runs: every ``tlbbalance`` command builds this parser, and
prometheus_client costs ~40 ms of imports.
"""

import sys

from nova_tlbbalance.cli import _common
from nova_tlbbalance.probes import libvirt_conn
from nova_tlbbalance.probes import verdict

PATHS = ('/metrics', '/')


def register(sub):
    p = sub.add_parser('exporter', help='serve status as Prometheus metrics')
    _common.add_source_options(p)
    p.add_argument('--listen', default='127.0.0.1',
                   help='address to bind (default %(default)s: loopback)')
    p.add_argument('--port', type=int, default=9788,
                   help='port (default %(default)s)')
    p.add_argument('--once', action='store_true',
                   help='print the metrics once to stdout and exit')
    p.set_defaults(func=run)


def source(args):
    """What one scrape reports: host facts, VM reports, verify's reasons
    (raises libvirt_conn.LibvirtUnavailable)."""
    def scrape():
        host, reps = _common.gather(args)
        verdicts = {r.name: verdict.reasons(r, host=host) for r in reps
                    if r.managed}
        return host, reps, verdicts
    return scrape


def app(reg):
    """prometheus_client's WSGI app on /metrics and /, 404 elsewhere, 503
    while libvirt cannot be reached."""
    from prometheus_client import exposition

    metrics = exposition.make_wsgi_app(reg)

    def wsgi(environ, start_response):
        if environ.get('PATH_INFO') not in PATHS:
            start_response('404 Not Found',
                           [('Content-Type', 'text/plain')])
            return [b'only /metrics here\n']
        try:
            return metrics(environ, start_response)
        except libvirt_conn.LibvirtUnavailable as exc:
            start_response('503 Service Unavailable',
                           [('Content-Type', 'text/plain')])
            return [('libvirt unavailable: %s\n' % exc).encode()]
    return wsgi


def run(args):
    import wsgiref.simple_server

    from prometheus_client import exposition

    from nova_tlbbalance import exporter

    class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
        def log_message(self, fmt, *a):
            pass

    reg = exporter.registry(source(args))
    if args.once:
        try:
            sys.stdout.write(exposition.generate_latest(reg).decode())
        except libvirt_conn.LibvirtUnavailable as exc:
            sys.stderr.write('tlbbalance: %s\n' % exc)
            return 2
        return 0

    srv = wsgiref.simple_server.make_server(
        args.listen, args.port, app(reg), exposition.ThreadingWSGIServer,
        handler_class=QuietHandler)
    sys.stderr.write('tlbbalance exporter on http://%s:%d/metrics\n'
                     % (args.listen, srv.server_address[1]))
    sys.stderr.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0
