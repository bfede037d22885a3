/**
 * The code examples of the README and the guides under docs/, as the guides test
 * runs them: every fenced block whose info string starts with `ts` or `js`. A block
 * marked `no-run` after the language (```` ```ts no-run ````) is a fragment that cannot
 * run alone (part of a handler, a file loaded with --import, a transaction of your
 * own): it is counted, not run. Blocks in other languages (sh, ini, yaml…) are not
 * examples.
 */
import { readFileSync } from 'node:fs';

/** One fenced example of a markdown file. */
export interface Example {
  /** 1-based line of the opening fence. */
  line: number;
  /** `ts` or `js`. */
  language: string;
  /** Marked `no-run`: counted, not run. */
  noRun: boolean;
  code: string;
}

const FENCE = /^```(\S*)(.*)$/;

/**
 * The ts and js blocks of the markdown file at `path`, in order.
 * @throws Error naming the line of a fence that is never closed
 */
export function examplesOf(path: string): Example[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const examples: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!.trimStart());
    if (!open) continue;
    const indent = lines[i]!.length - lines[i]!.trimStart().length;
    const end = lines.findIndex((text, j) => j > i && text.trim() === '```');
    if (end < 0) throw new Error(`${path}:${i + 1}: a code block that is never closed`);
    const language = open[1]!;
    if (language === 'ts' || language === 'js') {
      const code = lines.slice(i + 1, end).map((text) => text.slice(indent)).join('\n');
      examples.push({ line: i + 1, language, noRun: /\bno-run\b/.test(open[2]!), code });
    }
    i = end;
  }
  return examples;
}
