/** Operations endpoints (contract section 7): no API key, no envelope, for probes and scrapers. */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../metrics.ts';
import type { Common } from '../../services/context.ts';
import { Readiness } from '../../services/readiness.ts';
import type { Queryable } from '../../store/db.ts';

const hidden = { schema: { hide: true } };

export function operationsRoutes(app: FastifyInstance, common: Common, metrics: Metrics): void {
  probeRoutes(app, common.db, metrics);
  app.get('/openapi.json', hidden, async () => app.swagger());
}

/** Health, readiness and metrics: served by API processes and by the others' metrics port (ops-server.ts). */
export function probeRoutes(app: FastifyInstance, db: Queryable, metrics: Metrics): void {
  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

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
