#!/usr/bin/env python3
"""Where a tlbsim trace's accesses go, by region of 2^SHIFT bytes.

    tlbsim/traces/regions.py [-s SHIFT] TRACE[.gz]

One line per region touched, in address order: its address (as recorded,
before replay packs the regions from 0), the index of its first access and
its number of accesses; then a summary line: accesses, regions, distinct
pages of the trace. SHIFT defaults to 25 (32 MiB, GS464V's huge page).
The format is described in tlbsim/src/trace.c. Pure Python: about a
minute for 60 M accesses.
"""

import argparse
import collections
import gzip


def varint(data, i):
    """The LEB128 varint at data[i]: (value, index after it)."""
    v = s = 0
    while True:
        c = data[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if not c & 0x80:
            return v, i


def records(data):
    """Yield (page, count) for each record of a trace's bytes."""
    i, page, n = 16, 0, len(data)
    while i < n:
        v, i = varint(data, i)
        z = v >> 1
        page += (z >> 1) ^ -(z & 1)
        r = 0
        if v & 1:
            r, i = varint(data, i)
        yield page, r + 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('-s', '--shift', type=int, default=25)
    ap.add_argument('trace')
    args = ap.parse_args(argv)
    with open(args.trace, 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    if data[:8] != b'TLBSTRC1':
        ap.error('%s: not a tlbsim trace' % args.trace)
    page_shift = data[8]
    if args.shift < page_shift:
        ap.error('shift %d below the trace pages (2^%d)'
                 % (args.shift, page_shift))
    rs = args.shift - page_shift
    first, count, pages, acc = {}, collections.Counter(), set(), 0
    for page, n in records(data):
        region = page >> rs
        first.setdefault(region, acc)
        count[region] += n
        pages.add(page)
        acc += n
    for region in sorted(first):
        print('%#x %d %d' % (region << args.shift, first[region],
                             count[region]))
    print('accesses %d regions %d pages %d' % (acc, len(first), len(pages)))


if __name__ == '__main__':
    main()
