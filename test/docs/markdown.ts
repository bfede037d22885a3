/**
 * Reading the README and the guides under docs/ for their test: their code examples
 * ({@link examplesOf}), their headings' anchors and their relative links.
 *
 * Examples, as the guides test runs them: every fenced block whose info string starts with `ts` or `js`. A block
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

/**
 * The anchors GitHub gives the headings of `markdown` (outside code blocks): lower
 * case, punctuation but `-` and `_` removed, spaces as `-`, a repeated one suffixed
 * `-1`, `-2`…
 */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** The relative links of `markdown` (`[text](path#anchor)`), with their 1-based line; web links and mailto are left out. */
export function relativeLinksOf(markdown: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  let fenced = false;
  markdown.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z]+:/i.test(m[1]!)) links.push({ line: i + 1, target: m[1]! });
    }
  });
  return links;
}
