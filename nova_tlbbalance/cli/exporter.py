"""``tlbbalance exporter``: Prometheus metrics on a loopback port."""

import http.server
import sys

from nova_tlbbalance import exporter
from nova_tlbbalance.cli import _common
from nova_tlbbalance.probes import verdict


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


def scrape(args):
    host, reps = _common.collect(args)
    verdicts = {r.name: verdict.reasons(r, host=host) for r in reps
                if r.managed}
    return exporter.render(host, reps, verdicts)


def run(args):
    if args.once:
        sys.stdout.write(scrape(args))
        return 0

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path not in ('/metrics', '/'):
                self.send_error(404, 'only /metrics here')
                return
            try:
                body = scrape(args).encode()
                code = 200
            except SystemExit:
                body = b'libvirt unavailable\n'
                code = 503
            self.send_response(code)
            self.send_header('Content-Type',
                             'text/plain; version=0.0.4; charset=utf-8')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *a):
            pass

    srv = http.server.ThreadingHTTPServer((args.listen, args.port), Handler)
    sys.stderr.write('tlbbalance exporter on http://%s:%d/metrics\n'
                     % (args.listen, srv.server_address[1]))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
