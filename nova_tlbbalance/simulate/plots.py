# SPDX-License-Identifier: Apache-2.0
"""PNG plots of simulation results (matplotlib, no display needed)."""

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402


def _series_axes(ax, result, title, until=None):
    """Refills and limits over time, the first @until seconds if given."""
    s = result['series']
    t = s['t_s']
    if until is not None:
        n = sum(1 for v in t if v <= until)
        s = {k: v[:n] for k, v in s.items()}
        t = s['t_s']
    ax.plot(t, [v / 1e3 for v in s['refills_huge']], label='huge group')
    ax.plot(t, [v / 1e3 for v in s['refills_small']], label='small group')
    ax.set_xlabel('simulated time (s)')
    ax.set_ylabel('refills per tick (thousands)')
    ax.set_title(title)
    ax2 = ax.twinx()
    ax2.plot(t, s['huge_limit'], 'k--', label='N_hl (limit)')
    ax2.plot(t, s['huge_pages'], 'k:', label='N_hc (huge in use)')
    ax2.set_ylabel('host huge pages')
    ax2.set_ylim(bottom=0)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=8,
              loc='upper right')


def run_plot(result, path):
    """Refills per group and N_hl over time of one run."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    _series_axes(ax, result, '%s: %s on %s' % (
        result['name'], result['workload'], result['machine']))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def paper_plot(summary, results, path):
    """The --paper comparison: time and refills per config, and the
    controller run over time."""
    by = {r['name']: r for r in results}
    names = [c['name'] for c in summary['configs']]
    both = by.get('vm-both-thp')
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    ax = axes[0]
    rel = [by[n]['est_time_s'] / both['est_time_s'] if both else
           by[n]['est_time_s'] for n in names]
    ax.barh(names, rel, color=['tab:green' if 'controller' in n else
                               'tab:blue' for n in names])
    ax.axvline(1.0, color='k', lw=0.8)
    ax.set_xlabel('estimated time / vm-both-thp')
    ax.invert_yaxis()
    for i, v in enumerate(rel):
        ax.text(v, i, ' %.3f' % v, va='center', fontsize=8)
    ax.set_title('estimated time')
    ax = axes[1]
    huge = [by[n]['refills_huge'] / 1e6 for n in names]
    small = [by[n]['refills_small'] / 1e6 for n in names]
    ax.barh(names, huge, label='huge group')
    ax.barh(names, small, left=huge, label='small group')
    ax.set_xlabel('refills (millions)')
    ax.invert_yaxis()
    ax.set_yticklabels([])
    ax.legend(fontsize=8)
    ax.set_title('refills per TLB group')
    ctrl = by.get('vm-both-thp-controller')
    if ctrl:
        # the controller acts in the first tens of seconds of a long run
        until = max(60.0, 2 * (ctrl.get('converged_s') or 0))
        end = ctrl['series']['t_s'][-1] if ctrl['series']['t_s'] else 0
        _series_axes(axes[2], ctrl, 'controller run' if end <= until else
                     'controller run, first %.0f s of %.0f s' % (until, end),
                     until=until)
    fig.suptitle('tlbsim --paper: %s, workload %s' % (summary['machine'],
                                                      summary['workload']))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
