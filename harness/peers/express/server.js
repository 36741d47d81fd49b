// One instance of the express-rate-limit peer of rlbench (harness/peers):
// express with express-rate-limit on its Redis store (rate-limit-redis over
// node-redis), every instance sharing one Redis. Configured by the JSON in
// RLBENCH_EXPRESS_CONFIG: {port, redisURL, header, routes: [{method, path,
// limit, windowMs}]}, a route without limit being unlimited. Prints
// "listening on HOST:PORT" once it serves; on SIGTERM it stops.
'use strict';

const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const { createClient } = require('redis');

async function main() {
  const config = JSON.parse(process.env.RLBENCH_EXPRESS_CONFIG);
  const client = createClient({ url: config.redisURL });
  client.on('error', (err) => console.error('redis:', err.message));
  await client.connect();

  const app = express();
  config.routes.forEach((rt, i) => {
    const handlers = [];
    if (rt.limit) {
      handlers.push(rateLimit({
        windowMs: rt.windowMs,
        limit: rt.limit,
        standardHeaders: 'draft-8',
        legacyHeaders: false,
        keyGenerator: (req) => req.get(config.header) || '',
        store: new RedisStore({
          sendCommand: (...args) => client.sendCommand(args),
          prefix: `rl-express:${i}:`,
        }),
      }));
    }
    app[rt.method.toLowerCase()](rt.path, ...handlers, (req, res) => {
      res.type('text/plain').send('ok\n');
    });
  });

  const server = app.listen(config.port, '127.0.0.1', () => {
    const addr = server.address();
    console.log(`listening on ${addr.address}:${addr.port}`);
  });
  process.on('SIGTERM', () => {
    server.close(() => client.quit().finally(() => process.exit(0)));
    server.closeAllConnections();
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
