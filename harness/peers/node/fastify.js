// One instance of the @fastify/rate-limit peer of rlbench (harness/peers):
// Fastify with @fastify/rate-limit on its Redis store (ioredis, with the
// connectTimeout and maxRetriesPerRequest its README recommends), every
// instance sharing one Redis; each limited route has its own max and
// timeWindow (ms) and its own groupId. Configured by the JSON in
// RLBENCH_PEER_CONFIG (peers.ProcConfig). The failure mode maps to the
// documented skipOnError: open to true, closed to false (the default: a
// store error is a 500). Headers are the plugin's defaults: x-ratelimit-*
// and retry-after. Prints "listening on HOST:PORT" once it serves.
'use strict';

const Fastify = require('fastify');
const Redis = require('ioredis');

async function main() {
  const config = JSON.parse(process.env.RLBENCH_PEER_CONFIG);
  const redis = new Redis(config.redisURL, {
    connectTimeout: 500,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: config.storeTimeoutMs || undefined,
  });
  redis.on('error', (err) => console.error('redis:', err.message));
  const fastify = Fastify({ logger: false });
  await fastify.register(require('@fastify/rate-limit'), {
    global: false,
    redis,
    nameSpace: 'rl-fastify:',
    skipOnError: config.failureMode === 'open',
    keyGenerator: (req) => req.headers[config.header.toLowerCase()] || '',
  });
  config.routes.forEach((rt, i) => {
    const routeConfig = rt.limit
      ? { rateLimit: { max: rt.limit, timeWindow: rt.windowMs, groupId: `route${i}` } }
      : {};
    fastify.route({
      method: rt.method,
      url: rt.path,
      config: routeConfig,
      handler: async (req, reply) => reply.type('text/plain').send('ok\n'),
    });
  });
  const address = await fastify.listen({ port: config.port || 0, host: '127.0.0.1' });
  console.log(`listening on ${address.replace(/^http:\/\//, '')}`);
  process.on('SIGTERM', () => {
    fastify.close().finally(() => { redis.disconnect(); process.exit(0); });
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
