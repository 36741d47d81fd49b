// One instance of the rate-limiter-flexible peer of rlbench (harness/peers):
// an Express app whose limited routes consume one point of a
// RateLimiterRedis (points = limit, duration = window in seconds) on an
// ioredis client with enableOfflineQueue: false, as the package's README
// recommends, every instance sharing one Redis. Configured by the JSON in
// RLBENCH_PEER_CONFIG (peers.ProcConfig). The failure mode maps to the
// documented options: fallback to an insuranceLimiter (a RateLimiterMemory
// of the same points and duration, per process), open to admitting when
// consume rejects with an Error, closed to a 503. A rejection answers 429
// with Retry-After (seconds, rounded up) and X-RateLimit-* as in the
// README's Express example. Prints "listening on HOST:PORT" once it serves.
'use strict';

const express = require('express');
const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterMemory } = require('rate-limiter-flexible');

const config = JSON.parse(process.env.RLBENCH_PEER_CONFIG);
const timeout = config.storeTimeoutMs || undefined;
const client = new Redis(config.redisURL, {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  commandTimeout: timeout,
  connectTimeout: 1000,
});
client.on('error', (err) => console.error('redis:', err.message));

const app = express();
config.routes.forEach((rt, i) => {
  const handlers = [];
  if (rt.limit) {
    const opts = { points: rt.limit, duration: rt.windowMs / 1000, blockDuration: rt.blockSeconds || 0 };
    const limiter = new RateLimiterRedis({
      ...opts,
      storeClient: client,
      keyPrefix: `rl-flex:${i}`,
      insuranceLimiter: config.failureMode === 'fallback' ? new RateLimiterMemory(opts) : undefined,
    });
    handlers.push((req, res, next) => {
      limiter.consume(req.get(config.header) || '')
        .then((r) => {
          res.set('X-RateLimit-Limit', String(rt.limit));
          res.set('X-RateLimit-Remaining', String(r.remainingPoints));
          next();
        })
        .catch((r) => {
          if (r instanceof Error) {
            if (config.failureMode === 'open') return next();
            res.set('Retry-After', '1');
            return res.status(503).type('text/plain').send('rate limiter store unavailable\n');
          }
          res.set('Retry-After', String(Math.max(1, Math.ceil(r.msBeforeNext / 1000))));
          res.set('X-RateLimit-Limit', String(rt.limit));
          res.set('X-RateLimit-Remaining', String(r.remainingPoints));
          res.status(429).type('text/plain').send('Too Many Requests\n');
        });
    });
  }
  app[rt.method.toLowerCase()](rt.path, ...handlers, (req, res) => {
    res.type('text/plain').send('ok\n');
  });
});

const server = app.listen(config.port || 0, '127.0.0.1', () => {
  const addr = server.address();
  console.log(`listening on ${addr.address}:${addr.port}`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  client.disconnect();
});
