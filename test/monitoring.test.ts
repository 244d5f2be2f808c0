/**
 * The dashboard and alert rules (docs/operations/monitoring.md): promtool accepts the rules, each operator
 * alert herald raises has its rule, and every metric the dashboard and the rules query is one a live
 * herald serves on /metrics (a renamed metric would leave a panel empty and a rule silent).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { describeWithRealNode, findBinary } from './support/real-node.ts';

const run = promisify(execFile);
const RULES = 'deploy/prometheus/herald-rules.yml';
const DASHBOARD = 'deploy/grafana/herald.json';
const promtool = findBinary('promtool', '.ci/run installs it with apt-get install -y prometheus (Debian package: promtool checks the alert rules)');

/** The herald_* metric names a text (PromQL in YAML or JSON) uses. */
const metricNames = (text: string) => new Set([...text.matchAll(/\bherald_[a-z0-9_]+/g)].map((m) => m[0]));

/** The dashboard's PromQL: every target's expr and every variable's query. */
function dashboardQueries(): string {
  type Panel = { targets?: { expr: string }[]; panels?: Panel[] };
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[]; templating: { list: { definition?: string }[] } };
  const exprs = (panels: Panel[]): string[] => panels.flatMap((p) => [...(p.targets ?? []).map((t) => t.expr), ...exprs(p.panels ?? [])]);
  return [...exprs(dashboard.panels), ...dashboard.templating.list.map((v) => v.definition ?? '')].join('\n');
}

describeWithRealNode('alert rules (promtool)', promtool, () => {
  it('promtool check rules accepts deploy/prometheus/herald-rules.yml', async () => {
    const { stdout } = await run(promtool.path as string, ['check', 'rules', RULES]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });
});

describe('dashboard and rules against herald', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('every operator alert herald raises has a rule (its herald_alert label), resolutions aside', () => {
    const source = readFileSync('src/delivery/alert-monitor.ts', 'utf8');
    const union = /export type AlertKind =([^;]+);/.exec(source)?.[1] ?? '';
    const kinds = [...union.matchAll(/'([a-z.-]+)'/g)].map((m) => m[1] as string);
    expect(kinds).toContain('chain.stopped');
    // chain.recovered and node.eligible say that a lagging chain or an ineligible node is fine again: the rule resolves.
    const raised = kinds.filter((k) => k !== 'chain.recovered' && k !== 'node.eligible');
    const ruled = new Set([...readFileSync(RULES, 'utf8').matchAll(/herald_alert: (\S+)/g)].map((m) => m[1]));
    expect(raised.filter((k) => !ruled.has(k))).toEqual([]);
  });

  it('every metric the dashboard and the rules use is on a live /metrics answer', async () => {
    const res = await t.request('GET', '/metrics');
    expect(res.status).toBe(200);
    const served = new Set<string>();
    for (const [, name, type] of res.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      served.add(name as string);
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) served.add(`${name}${suffix}`);
    }
    expect(served.size).toBeGreaterThan(30);
    const dashboard = metricNames(dashboardQueries());
    // The rules' PromQL: their expr lines (labels such as herald_alert are not metrics).
    const rules = metricNames([...readFileSync(RULES, 'utf8').matchAll(/^\s*expr: (.+)$/gm)].map((m) => m[1]).join('\n'));
    expect(rules.size).toBeGreaterThan(8);
    expect(dashboard.size).toBeGreaterThan(20);
    expect([...dashboard].filter((name) => !served.has(name))).toEqual([]);
    expect([...rules].filter((name) => !served.has(name))).toEqual([]);
    // The panels cover what an operator watches: delivery, queue, chains, nodes, API, retention.
    for (const name of [
      'herald_callbacks_sent_total',
      'herald_callbacks_oldest_due_seconds',
      'herald_chain_lag_blocks',
      'herald_chain_node_eligible',
      'herald_http_request_duration_seconds_bucket',
      'herald_retention_pruned_rows_total',
    ]) {
      expect(dashboard).toContain(name);
    }
  });
});
