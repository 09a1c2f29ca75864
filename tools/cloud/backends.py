# SPDX-License-Identifier: Apache-2.0
"""MariaDB and RabbitMQ from Debian's packages, started by hand.

No systemd here (docs/design/platform.md): each server runs in the
foreground as a process of this cloud, with its data, sockets and pid
files under the cloud's directory and its ports on 127.0.0.1 only.
"""

import os
import shutil
import socket

import configs
import procs


def _port_answers(port):
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


# -- MariaDB ----------------------------------------------------------------

def mysql_socket(lay):
    return lay.path('run', 'mysqld.sock')


def start_mariadb(lay, state):
    datadir = lay.path('data', 'mysql')
    if not os.path.isdir(os.path.join(datadir, 'mysql')):
        os.makedirs(datadir, exist_ok=True)
        procs.run(['mariadb-install-db', '--no-defaults',
                   '--datadir=' + datadir, '--user=root',
                   '--auth-root-authentication-method=socket',
                   '--skip-test-db'],
                  'mariadb-install-db', lay.log('mariadb-install'))
    return procs.spawn(state, 'mariadb', [
        shutil.which('mariadbd') or '/usr/sbin/mariadbd', '--no-defaults',
        '--datadir=' + datadir, '--socket=' + mysql_socket(lay),
        '--port=%d' % lay.port('mysql'), '--bind-address=127.0.0.1',
        '--user=root', '--pid-file=' + lay.path('run', 'mysqld.pid'),
        '--skip-name-resolve', '--skip-log-bin',
        '--innodb-buffer-pool-size=128M',
        '--innodb-flush-log-at-trx-commit=0', '--innodb-doublewrite=0',
        '--max-connections=500', '--character-set-server=utf8mb4',
        '--log-error=' + lay.log('mariadb')], lay.log('mariadb-stdout'))


def mysql(lay, sql, what):
    # the statements on stdin: a password in them stays out of the
    # command line (/proc) and the setup log
    return procs.run(['mariadb', '--no-defaults', '-uroot',
                      '--socket=' + mysql_socket(lay)], what,
                     lay.log('mariadb-setup'), input=sql)


def setup_databases(lay, state):
    procs.wait_for('MariaDB on port %d' % lay.port('mysql'),
                   lambda: _port_answers(lay.port('mysql')), 60,
                   on_wait=lambda: procs.check_alive(state, 'mariadb'))
    # the password is URL-safe base64: nothing to quote in SQL
    stmts = ["CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' IDENTIFIED BY "
             "'%s'" % (configs.DB_USER, lay.secrets['db'])]
    for db in configs.DATABASES:
        stmts.append('CREATE DATABASE IF NOT EXISTS %s CHARACTER SET utf8'
                     % db)
        stmts.append("GRANT ALL PRIVILEGES ON %s.* TO '%s'@'127.0.0.1'"
                     % (db, configs.DB_USER))
    mysql(lay, ';\n'.join(stmts) + ';\n', 'create the databases')


# -- RabbitMQ ---------------------------------------------------------------

def _rabbit_env(lay):
    base = lay.path('data', 'rabbit')
    node = 'tlbbcloud%d@localhost' % lay.port_base
    return {
        'HOME': base,
        'RABBITMQ_MNESIA_BASE': os.path.join(base, 'mnesia'),
        'RABBITMQ_LOG_BASE': lay.logs,
        'RABBITMQ_NODENAME': node,
        'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
        'RABBITMQ_NODE_PORT': str(lay.port('rabbit')),
        'RABBITMQ_DIST_PORT': str(lay.port('rabbit_dist')),
        # the Erlang distribution listener too, on loopback only
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
            '-kernel inet_dist_use_interface {127,0,0,1}',
        'RABBITMQ_PID_FILE': lay.path('run', 'rabbit.pid'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(base,
                                                      'enabled_plugins'),
        'RABBITMQ_CONFIG_FILE': os.path.join(base, 'rabbitmq.conf'),
        'RABBITMQ_ADVANCED_CONFIG_FILE': os.path.join(base,
                                                      'advanced.config'),
        'RABBITMQ_CONF_ENV_FILE': os.path.join(base, 'rabbitmq-env.conf'),
        # docs/design/platform.md#a-real-cloud-on-this-machine: epmd
        # listens on all addresses unless told, and another epmd may own
        # the default port: ours is private.
        'ERL_EPMD_ADDRESS': '127.0.0.1',
        'ERL_EPMD_PORT': str(lay.port('epmd')),
    }


def rabbit_config(lay):
    """rabbitmq.conf: the broker's first boot (a fresh database every up)
    creates this user instead of guest/guest; guest never exists."""
    return ('default_user = %s\n'
            'default_pass = %s\n'
            'listeners.tcp.default = 127.0.0.1:%d\n'
            'log.file.level = warning\n'
            'disk_free_limit.absolute = 50MB\n') % (
                configs.RABBIT_USER, lay.secrets['rabbit'],
                lay.port('rabbit'))


def start_rabbit(lay, state):
    env = _rabbit_env(lay)
    os.makedirs(env['HOME'], exist_ok=True)
    with open(env['RABBITMQ_ENABLED_PLUGINS_FILE'], 'w') as f:
        f.write('[].\n')
    configs.write_private(env['RABBITMQ_CONFIG_FILE'], rabbit_config(lay))
    with open(env['RABBITMQ_ADVANCED_CONFIG_FILE'], 'w') as f:
        f.write('[].\n')
    open(env['RABBITMQ_CONF_ENV_FILE'], 'w').close()
    procs.spawn(state, 'epmd', ['epmd', '-address', '127.0.0.1', '-port',
                                env['ERL_EPMD_PORT']],
                lay.log('epmd'), env=env)
    procs.wait_for('epmd on port %s' % env['ERL_EPMD_PORT'],
                   lambda: _port_answers(int(env['ERL_EPMD_PORT'])), 30,
                   on_wait=lambda: procs.check_alive(state, 'epmd'))
    return procs.spawn(state, 'rabbitmq',
                       ['/usr/lib/rabbitmq/bin/rabbitmq-server'],
                       lay.log('rabbitmq-stdout'), env=env)


def wait_rabbit(lay, state, timeout=180):
    # The AMQP listener opens last in RabbitMQ's boot: when it answers,
    # the broker is ready (rabbitmqctl would need its own Erlang node).
    procs.wait_for('RabbitMQ on port %d' % lay.port('rabbit'),
                   lambda: _port_answers(lay.port('rabbit')), timeout,
                   interval=0.5,
                   on_wait=lambda: procs.check_alive(state, 'rabbitmq'))
