# SPDX-License-Identifier: Apache-2.0
"""tools/bench/cloud_boot_time.py without a cloud: a sentence naming what
is missing, exit status 2, no traceback (it once died with "Connection
refused"). Run as the script it is, in a fresh interpreter."""

import json
import os
import socket
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, 'tools', 'bench', 'cloud_boot_time.py')


def bench(cloud_dir):
    env = dict(os.environ, TLBB_CLOUD_DIR=str(cloud_dir))
    return subprocess.run([sys.executable, SCRIPT, '--rounds', '1'],
                          capture_output=True, text=True, env=env,
                          timeout=120)


def _cbt():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import cloud_boot_time as cbt
    finally:
        sys.path.remove(os.path.dirname(SCRIPT))
    return cbt


def test_no_cloud_dir_is_named(tmp_path):
    p = bench(tmp_path)
    assert p.returncode == 2
    assert 'Traceback' not in p.stderr
    assert 'no cloud: %s does not exist' % (tmp_path / 'cloud.json') \
        in p.stderr


def test_cloud_that_does_not_answer_is_named(tmp_path):
    # a loopback port nobody listens on: bound, then closed
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    url = 'http://127.0.0.1:%d/v3' % port
    (tmp_path / 'cloud.json').write_text(json.dumps(
        {'auth_url': url, 'admin': {'password': 'x'}}))
    p = bench(tmp_path)
    assert p.returncode == 2
    assert 'Traceback' not in p.stderr
    assert 'no cloud answers at %s' % url in p.stderr


def test_hook_records_are_this_runs_only(tmp_path):
    """The bench reads each host's hook log from where it stood when the
    run began: earlier boots' records and a torn line are left out."""
    cbt = _cbt()
    log = tmp_path / 'hook.jsonl'
    log.write_text(json.dumps({'phase': 'prepare', 'elapsed_ms': 999}) + '\n')
    facts = {'hosts': [{'hook_log': str(log)},
                       {'hook_log': str(tmp_path / 'not-yet.jsonl')}]}
    offsets = cbt.hook_offsets(facts)
    assert offsets == {str(log): log.stat().st_size,
                       str(tmp_path / 'not-yet.jsonl'): 0}
    with open(log, 'a') as f:
        f.write(json.dumps({'phase': 'started', 'elapsed_ms': 40}) + '\n')
        f.write('{"phase": "stopp')
    (tmp_path / 'not-yet.jsonl').write_text(
        json.dumps({'phase': 'prepare', 'elapsed_ms': 30}) + '\n')
    recs = cbt.hook_records(offsets)
    assert sorted((r['phase'], r['elapsed_ms']) for r in recs) == [
        ('prepare', 30), ('started', 40)]


def test_interval_brackets_the_median_and_narrows_with_rounds():
    cbt = _cbt()
    untagged = [2.0] * 40
    # per-round ratios 0.90 .. 1.29 (median 1.095)
    tagged = [2.0 * (0.90 + i / 100) for i in range(40)]
    low, high = cbt.interval(tagged, untagged)
    assert low < 1.095 < high
    assert (low, high) == cbt.interval(tagged, untagged)   # seeded
    low4, high4 = cbt.interval(tagged * 4, untagged * 4)
    assert low <= low4 < 1.095 < high4 <= high
    assert high4 - low4 < high - low


def test_verdict_names_what_the_interval_says():
    cbt = _cbt()
    assert cbt.verdict(0.98, 1.04, 10).startswith('met')
    assert cbt.verdict(1.06, 1.10, 10).startswith('missed')
    assert cbt.verdict(0.99, 1.07, 10).startswith('not resolved')
    # a bootstrap over two rounds "met" the goal once: too few to say
    assert cbt.verdict(0.45, 1.04, 2) == (
        'not resolved: 2 round(s), the goal asks for at least 10')
