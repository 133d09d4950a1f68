/** What `init` did, on stdout: each table created or found, and the command to run next. */
export interface InitView {
  db: string;
  tables: Array<{ table: string; created: boolean }>;
  /** A framework's table (Laravel, think-queue) that init leaves to the framework's migrations. */
  frameworkTable?: string;
  next: string;
}

export function renderInit(view: InitView): string {
  const lines = [`init on ${view.db}`];
  for (const t of view.tables) lines.push(`  ${t.created ? 'created' : 'exists '}  ${t.table}`);
  if (view.frameworkTable)
    lines.push(
      `  left alone ${view.frameworkTable} (its framework's migrations create it; taskrecon reads it as it is)`,
    );
  const created = view.tables.filter((t) => t.created).length;
  lines.push(created ? `${created} table(s) created.` : 'Nothing to create: every table exists.');
  lines.push(`Next: ${view.next}`);
  return lines.join('\n');
}
