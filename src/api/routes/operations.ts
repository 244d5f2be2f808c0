/** Operations endpoints (contract section 7): no API key, no envelope, for probes and scrapers. */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../metrics.ts';
import type { Common } from '../../services/context.ts';
import { Readiness } from '../../services/readiness.ts';

export function operationsRoutes(app: FastifyInstance, common: Common, metrics: Metrics): void {
  const hidden = { schema: { hide: true } };
  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

  const readiness = new Readiness(common.db);
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

  app.get('/openapi.json', hidden, async () => app.swagger());
}
