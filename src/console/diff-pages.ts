import type { Context } from '../context.js';
import { DEFAULT_CHUNK_TIME_MS } from '../core/diff.js';
import type { BoundSource } from '../db/bind-source.js';
import { prepareRules, RuleTargets, runDiff, selectRules, type RuleResult } from '../verbs/diff/index.js';
import type { DiffPages } from './deps.js';
import { describeForPage } from './errors.js';

/** Findings kept per kind on the diff page. */
const SAMPLES = 50;

/** The diff page's rules: the configured ones, each run on demand as `diff --rule NAME` would, reading only. */
export function diffPages(context: Context, main: BoundSource): DiffPages {
  const configured = context.config.rules ?? [];
  let problem: string | undefined;
  try {
    selectRules(configured, undefined);
  } catch (error) {
    const d = describeForPage(error);
    problem = `${d.message}. ${d.hint ?? ''}`.trim();
  }
  return {
    names: configured.map((r) => r.name),
    problem,
    async run(name: string): Promise<RuleResult> {
      const [rule] = selectRules(configured, [name]);
      const targets = new RuleTargets(context, main);
      try {
        const prepared = await prepareRules([await targets.open(rule as NonNullable<typeof rule>)], {});
        const result = await runDiff(prepared, {
          chunkTimeMs: DEFAULT_CHUNK_TIME_MS,
          samplesPerKind: SAMPLES,
        });
        return result.rules[0] as RuleResult;
      } finally {
        await targets.close();
      }
    },
  };
}
