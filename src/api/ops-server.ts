/**
 * The metrics port of a process without the api role (`metricsPort`): /metrics, /healthz and /readyz,
 * nothing else, no API key. Delivery and ingest processes have counters of their own (callbacks sent,
 * blocks applied, node health) that no API process can report, and an orchestrator needs to probe them.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics.ts';
import type { ProcessHealth } from '../services/context.ts';
import type { Queryable } from '../store/db.ts';
import { probeRoutes } from './routes/operations.ts';

export async function startOpsServer(options: {
  db: Queryable;
  metrics: Metrics;
  host: string;
  port: number;
  health?: ProcessHealth;
}): Promise<{ server: FastifyInstance; url: string }> {
  const server = Fastify({ logger: false, forceCloseConnections: true });
  probeRoutes(server, options.db, options.metrics, options.health);
  const url = await server.listen({ host: options.host, port: options.port });
  return { server, url };
}
