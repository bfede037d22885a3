/**
 * Every command's `--help` ends with an example (issue 30, item 12), and the
 * example names that command (or one of its subcommands) with flags it has.
 * In-process: the help is printed by commander into a string, no child process.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { createProgram } from '../../src/cli/program.js';

/** Every command below `program`, with its path ('' for the program, 'queue limit'…). */
function commands(command: Command, path = ''): Array<{ path: string; command: Command }> {
  return [{ path, command }, ...command.commands.flatMap((sub) => commands(sub, path === '' ? sub.name() : `${path} ${sub.name()}`))];
}

/** What `baton <path> --help` prints. */
function helpOf(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (s) => void (text += s), writeErr: (s) => void (text += s) });
  command.outputHelp();
  return text;
}

describe('CLI help', () => {
  const program = createProgram();
  const all = commands(program);

  it('covers every command and subcommand', () => {
    expect(all.map((c) => c.path)).toEqual(expect.arrayContaining(['', 'worker', 'enqueue', 'queue', 'queue limit', 'schedule add', 'demo']));
  });

  it.each(all.map((c) => [c.path || 'baton', c] as const))('%s --help ends with an example of a command it has, with flags that command takes', (_, { command }) => {
    const help = helpOf(command);
    const match = /\nExample:\n {2}\$ (.+)\n?$/.exec(help);
    expect(match, help).not.toBeNull();
    // The example's words: an environment prefix, `baton`, the command path, then arguments and flags.
    const words = match![1]!.replace(/\s+#.*$/, '').split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w));
    expect(words[0]).toBe('baton');
    let target = program;
    let i = 1;
    for (; i < words.length; i++) {
      const sub = target.commands.find((c) => c.name() === words[i]);
      if (!sub) break;
      target = sub;
    }
    expect(target.commands, `the example runs a command, not a group: ${match![1]}`).toEqual([]);
    const flags = new Set(target.options.map((o) => o.long));
    for (const word of words.slice(i).filter((w) => w.startsWith('--'))) expect(flags, `${word} in "${match![1]}"`).toContain(word);
  });
});
