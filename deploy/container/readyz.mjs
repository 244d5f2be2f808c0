// The container image's HEALTHCHECK (Dockerfile): GET /readyz on this process's own port, HERALD_PORT with
// the api role, HERALD_METRICS_PORT without it (docs/operations/production-topology.md); exit 0 when
// ready. The image has no curl: Node's fetch does it.
const roles = (process.env.HERALD_ROLES || 'api,ingest,delivery').split(',').map((role) => role.trim());
const port = roles.includes('api') ? process.env.HERALD_PORT || '8080' : process.env.HERALD_METRICS_PORT;
if (!port) {
  console.error('herald healthcheck: a process without the api role answers /readyz on HERALD_METRICS_PORT: set it');
  process.exit(1);
}
try {
  const answer = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(4000) });
  if (!answer.ok) console.error(`herald healthcheck: /readyz answered ${answer.status} ${await answer.text()}`);
  process.exit(answer.ok ? 0 : 1);
} catch (error) {
  console.error(`herald healthcheck: /readyz on port ${port}: ${error.message}`);
  process.exit(1);
}
