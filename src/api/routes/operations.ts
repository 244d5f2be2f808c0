/** Operations endpoints (docs/reference/api.md#endpoints-without-credentials): no API key, no envelope, for probes and scrapers. */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../metrics.ts';
import type { Common, ProcessHealth } from '../../services/context.ts';
import { Readiness } from '../../services/readiness.ts';
import type { Queryable } from '../../store/db.ts';
import { HERALD_VERSION } from '../../version.ts';

const hidden = { schema: { hide: true } };

export function operationsRoutes(app: FastifyInstance, common: Common, metrics: Metrics): void {
  probeRoutes(app, common.db, metrics, common.health);
  app.get('/openapi.json', hidden, async () => app.swagger());
}

/**
 * Health, readiness and metrics: served by API processes and by the others' metrics port (ops-server.ts).
 * /healthz is 503 while something this process is responsible for is down (the embedded database it
 * started, while it is being started again): a process manager's liveness probe must not see it healthy.
 * Both answers carry herald's version, so an operator sees which one runs where during a rolling upgrade.
 */
export function probeRoutes(app: FastifyInstance, db: Queryable, metrics: Metrics, health?: ProcessHealth): void {
  app.get('/healthz', hidden, async (_request, reply) => {
    const state = health?.();
    if (!state || state.up) return { status: 'ok', version: HERALD_VERSION };
    reply.code(503);
    return { status: 'unhealthy', reason: state.reason, version: HERALD_VERSION };
  });

  const readiness = new Readiness(db);
  app.get('/readyz', hidden, async (_request, reply) => {
    const state = await readiness.state();
    if (state.ready) return { status: 'ready' };
    reply.code(503);
    return { status: 'unavailable', reason: state.reason };
  });

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return await metrics.registry.metrics();
  });
}
