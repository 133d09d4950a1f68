/**
 * bench/RESULTS.md is made of sections, each between `<!-- bench:NAME:begin -->` and
 * `<!-- bench:NAME:end -->`. A benchmark script rewrites only its own sections and leaves every
 * other one as it is, so scripts for different commands can share the file. A new section goes at
 * the end of the file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const TITLE = '# taskrecon benchmarks\n';

export function updateSection(file, name, body) {
  const begin = `<!-- bench:${name}:begin -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${begin}\n${body.trim()}\n${end}`;
  let text = existsSync(file) ? readFileSync(file, 'utf8') : TITLE;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) text = text.slice(0, from) + block + text.slice(to + end.length);
  else text = `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}

/** The facts of the machine a run happened on, as a markdown list. */
export function machineFacts(extra = {}) {
  const cpus = os.cpus();
  const facts = {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    cpu: `${cpus.length} × ${cpus[0]?.model ?? 'unknown'}`,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    'load average at start (1/5/15 min)': os
      .loadavg()
      .map((n) => n.toFixed(2))
      .join(' / '),
    ...extra,
  };
  return Object.entries(facts)
    .map(([k, v]) => `- ${k}: ${v}`)
    .join('\n');
}

/** A markdown table from rows of objects (the keys of the first row are the header). */
export function markdownTable(rows) {
  if (rows.length === 0) return '(no rows)';
  const keys = Object.keys(rows[0]);
  const cell = (v) => String(v ?? 'NULL').replace(/\|/g, '\\|');
  return [
    `| ${keys.join(' | ')} |`,
    `|${keys.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${keys.map((k) => cell(r[k])).join(' | ')} |`),
  ].join('\n');
}
