/** Operations endpoints (contract section 7): no API key, no envelope, for probes and scrapers. */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../metrics.ts';
import type { Common } from '../../services/context.ts';

export function operationsRoutes(app: FastifyInstance, common: Common, metrics: Metrics): void {
  const hidden = { schema: { hide: true } };
  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

  app.get('/readyz', hidden, async (_request, reply) => {
    try {
      await common.db.query('readyz', 'SELECT 1');
      return { status: 'ready' };
    } catch (error) {
      reply.code(503);
      return { status: 'unavailable', reason: `The database is not reachable: ${(error as Error).message}` };
    }
  });

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return await metrics.registry.metrics();
  });

  app.get('/openapi.json', hidden, async () => app.swagger());
}
