import { spawn } from 'node:child_process';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from './sandbox.js';
import type { TourStep } from './steps.js';

const BIN = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));

export interface StepOutcome {
  title: string;
  command: string;
  exitCode: number | null;
  ok: boolean;
}

/** The command line as a user would type it from the current directory. */
export function commandLine(step: TourStep, sandbox: Sandbox, cwd = process.cwd()): string[] {
  const config = relative(cwd, sandbox.configFile) || sandbox.configFile;
  return [...step.args(sandbox), '--config', config];
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs each step as the real CLI, its output going straight to this terminal (so tables look as
 * they would for the user), with a heading and the command to run it yourself before it.
 */
export async function runTour(
  steps: TourStep[],
  sandbox: Sandbox,
  print: (text: string) => void,
  options: { quiet?: boolean } = {},
): Promise<StepOutcome[]> {
  const outcomes: StepOutcome[] = [];
  for (const [index, step] of steps.entries()) {
    const args = commandLine(step, sandbox);
    const command = `taskrecon ${args.map(quote).join(' ')}`;
    if (!options.quiet)
      print(`\n── ${index + 1}/${steps.length} ${step.title}\n${step.why}\n\n$ ${command}\n`);
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: options.quiet ? 'ignore' : 'inherit' });
      child.on('error', reject);
      child.on('close', resolve);
    });
    const ok = (step.okExits ?? [0]).includes(exitCode ?? -1);
    if (!options.quiet && exitCode !== 0) print(`(exit ${exitCode}${ok ? ': expected here' : ''})`);
    outcomes.push({ title: step.title, command, exitCode, ok });
  }
  return outcomes;
}
