import type { Command } from 'commander';

/**
 * One example per command, shown at the end of its `--help` under "Example:", keyed
 * by the command's path below `baton` ('' for `baton` itself, 'queue limit' for a
 * subcommand). Every command has one (test/cli/help.test.ts); the full reference is
 * docs/cli.md.
 */
const EXAMPLES: Readonly<Record<string, string>> = {
  '': 'baton worker --tasks dist/tasks.js --concurrency 20',
  worker: 'baton worker --tasks dist/tasks.js --concurrency 20 --queue default --queue emails --http 8081',
  serve: 'BATON_ADMIN_TOKEN=secret baton serve --tasks dist/tasks.js --host 0.0.0.0 --port 8080',
  enqueue: `baton enqueue send-email --payload '{"to":"ada@example.com"}' --queue emails --delay 60000 --key welcome-ada   # --wait prints its result`,
  cancel: 'baton cancel 42 --reason "not needed"        # or by filter: baton cancel --task sync --state queued --dry-run',
  send: `baton send 42 shipped --payload '{"tracking":"TRK-981"}'   # or key:order-7 for the job holding that key`,
  retry: 'baton retry 42 --fresh                      # --fresh: start over, without the checkpoint',
  promote: 'baton promote 42                            # a delayed, retrying or snoozed job runs now',
  jobs: 'baton jobs --state failed --queue emails --limit 20',
  job: 'baton job 42 --json',
  schedules: 'baton schedules --json',
  schedule: `baton schedule add hourly-report --cron '0 * * * *' --task report --payload '{"kind":"hourly"}'`,
  'schedule add': `baton schedule add nightly --cron '30 2 * * *' --timezone Europe/Berlin --task report --overlap skip`,
  'schedule pause': 'baton schedule pause nightly',
  'schedule resume': 'baton schedule resume nightly',
  'schedule trigger': 'baton schedule trigger nightly',
  'schedule remove': 'baton schedule remove nightly',
  services: 'baton services',
  queues: 'baton queues --json',
  queue: 'baton queue limit exports 5',
  'queue pause': 'baton queue pause emails',
  'queue resume': 'baton queue resume emails',
  'queue limit': 'baton queue limit exports 5                 # "none" removes the limit',
  'queue rate': 'baton queue rate payments 100 60000         # at most 100 starts in any 60 s',
  keys: 'baton keys sync --limit 10',
  delete: 'baton delete 42',
  purge: 'baton purge --queue emails --finished-before 2030-01-01 --dry-run',
  migrate: 'BATON_DATABASE_URL=postgres://app@db:5432/app?schema=baton baton migrate',
  demo: 'baton demo node_modules --concurrency 4',
};

/** The example of the command at `path`, undefined when it has none. */
export function helpExample(path: string): string | undefined {
  return EXAMPLES[path];
}

/**
 * Adds "Example:" after the help of `command` and of each of its subcommands.
 * @param path - the command's path below `baton` ('' for the program itself)
 */
export function addHelpExamples(command: Command, path = ''): Command {
  const example = helpExample(path);
  if (example !== undefined) command.addHelpText('after', `\nExample:\n  $ ${example}`);
  for (const sub of command.commands) addHelpExamples(sub, path === '' ? sub.name() : `${path} ${sub.name()}`);
  return command;
}
