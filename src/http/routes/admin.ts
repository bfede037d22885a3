import { Hono } from 'hono';
import type { Baton } from '../../baton.js';
import { readJson } from '../body.js';
import { jobJson } from '../serialize.js';

/** GET /api/schedules, POST /api/schedules/:name/pause|resume|trigger, and the same for /api/services. */
export function adminRoutes(baton: Baton, options: { bodyLimit: number }): Hono {
  const app = new Hono();
  app.get('/schedules', async (c) => c.json({ schedules: await baton.schedules.list() }));
  app.post('/schedules/:name/:action{pause|resume|trigger}', async (c) => {
    await readJson(c, options.bodyLimit);
    const name = c.req.param('name');
    const action = c.req.param('action');
    if (action === 'trigger') return c.json({ job: jobJson(await baton.schedules.trigger(name), baton.clock.now()) });
    await (action === 'pause' ? baton.schedules.pause(name) : baton.schedules.resume(name));
    return c.json({ schedule: await baton.schedules.get(name) });
  });
  app.get('/services', async (c) => c.json({ services: await baton.services.list() }));
  app.post('/services/:name/:action{pause|resume|trigger}', async (c) => {
    await readJson(c, options.bodyLimit);
    const name = c.req.param('name');
    const action = c.req.param('action');
    await (action === 'pause' ? baton.services.pause(name) : action === 'resume' ? baton.services.resume(name) : baton.services.trigger(name));
    return c.json({ service: await baton.services.get(name) });
  });
  return app;
}
