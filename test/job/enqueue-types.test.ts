/**
 * Type-level: a typed `enqueue` with a bad payload field is reported at that field,
 * naming it, not as "the last overload" refusing a Task where a string was expected.
 * One `tsc` run on a fixture written to a temp directory (TypeScript 7 has no JS API).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

const fixture = `import { createBaton, defineTask, type Job } from 'baton-jobs';

const sendEmail = defineTask('send-email', {
  handler: async (payload: { to: string; subject: string }) => payload.to.length,
});

export async function main(): Promise<void> {
  const baton = await createBaton({});
  const typed: Job<{ to: string; subject: string }, number> = await baton.enqueue(sendEmail, { to: 'a@example.com', subject: 'hi' });
  const byName: Job = await baton.enqueue('send-email', { anything: true });
  const noPayload: Job = await baton.enqueue('send-email');
  await baton.enqueue(sendEmail, { to: 'a@example.com', subject: 'hi' }, { queue: 'mail', delay: 1000 });
  void typed; void byName; void noPayload;
  await baton.enqueue(sendEmail, { to: 'a@example.com', subject: 42 }); // BAD LINE
}
`;

// Driver-independent: run once (in the sqlite project), not once per driver.
describe.skipIf(process.env.BATON_TEST_DRIVER === 'postgres')('Baton.enqueue types', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-types-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a payload field of the wrong type is reported at that field, naming it; the good calls compile', async () => {
    writeFileSync(join(dir, 'fixture.ts'), fixture);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2024'], strict: true, noEmit: true, skipLibCheck: true,
          types: ['node'], typeRoots: [join(REPO_ROOT, 'node_modules/@types')], customConditions: ['baton-source'],
          paths: { 'baton-jobs': [join(REPO_ROOT, 'src/index.ts')] },
        },
        files: ['fixture.ts'],
      }),
    );
    const output = await new Promise<string>((resolve) => {
      execFile(join(REPO_ROOT, 'node_modules/.bin/tsc'), ['-p', join(dir, 'tsconfig.json'), '--pretty', 'true'], { cwd: REPO_ROOT, timeout: 110_000, env: { ...process.env, NO_COLOR: '1' } }, (_error, stdout, stderr) => resolve(stdout + stderr));
    });
    const text = output.replace(/\x1b\[[0-9;]*m/g, '');
    const badLine = fixture.split('\n').findIndex((l) => l.includes('BAD LINE')) + 1;
    const errors = text.split('\n').filter((l) => / - error TS\d+/.test(l));
    expect(errors, text).toHaveLength(1);
    expect(errors[0], text).toMatch(new RegExp(`fixture\\.ts:${badLine}:\\d+ - error TS2322: Type 'number' is not assignable to type 'string'`));
    expect(text).toMatch(/The expected type comes from property 'subject'/);
    expect(text).not.toMatch(/overload/);
  });
});
