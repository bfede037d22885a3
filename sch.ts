import { defineSchedule, defineTask, createBaton } from 'baton-jobs';
const t = defineTask('r', { handler: async () => 1 });
for (const o of [{ timeout: 3000000000 }, { timeout: 0 }, { maxAttempts: 0 }, { catchUpLimit: 0 }, { catchUpLimit: 1e9 }]) {
  try { defineSchedule('s', { every: 60000, task: t, payload: null, ...(o as any) }); console.log('ACCEPTED', JSON.stringify(o)); }
  catch (e: any) { console.log('REFUSED', JSON.stringify(o), e.message); }
}
const baton = await createBaton({ database: 'sqlite:./wo.db' });
for (const o of [{ concurrency: 0 }, { drainTimeout: 3e9 }, { leaseTtl: 3e9 }, { pollInterval: Infinity }, { queues: [] }, { queues: [''] }]) {
  try { baton.worker({ tasks: [t], ...(o as any) }); console.log('ACCEPTED worker', JSON.stringify(o)); } catch (e: any) { console.log('REFUSED worker', JSON.stringify(o), e.message); }
}
await baton.close();
