/** A customer's plan in words (GET /account's and the operator's `plan`), instead of its raw field names. */
const LABELS: Record<string, [string, (v: unknown) => string]> = {
  mainnetAllowed: ['Mainnets', (v) => (v ? 'allowed' : 'not allowed (testnets only)')],
  maxActiveSubscriptions: ['Active subscriptions', (v) => (v === null ? 'no limit' : `at most ${v}`)],
  requestsPerSecond: ['Requests per second', (v) => `${v} per API key`],
};

export function planFacts(plan: Record<string, unknown>): { key: string; label: string; value: string }[] {
  return Object.entries(plan).map(([key, v]) => {
    const known = LABELS[key];
    return known ? { key, label: known[0], value: known[1](v) } : { key, label: key, value: v === null ? 'no limit' : String(v) };
  });
}

export function planText(plan: Record<string, unknown>): string {
  return planFacts(plan)
    .map((f) => `${f.label}: ${f.value}`)
    .join('; ');
}
