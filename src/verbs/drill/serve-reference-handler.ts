#!/usr/bin/env node
import { connect } from '../../db/connect.js';
import { HANDLER_VARIANTS, startReferenceHandler, type HandlerVariant } from './reference-handler.js';

/**
 * Runs the reference handler as its own process, for drilling a staging setup end to end:
 *   node dist/drills/serve-reference-handler.js --db mysql://app@127.0.0.1/shop [--port 8080] [--variant non-idempotent]
 * Prints one JSON line `{"url": ...}` on stdout once listening; stops on SIGTERM/SIGINT.
 */
function arg(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : process.argv[index + 1];
}

const dsn = arg('db') ?? process.env.TASKRECON_DB;
if (!dsn) {
  process.stderr.write(
    'usage: serve-reference-handler --db DSN [--port N] [--variant idempotent|non-idempotent]\n',
  );
  process.exit(3);
}
const variant = (arg('variant') ?? 'idempotent') as HandlerVariant;
if (!HANDLER_VARIANTS.includes(variant)) {
  process.stderr.write(`--variant must be one of ${HANDLER_VARIANTS.join(', ')}\n`);
  process.exit(3);
}
const db = await connect(dsn, { create: true });
const handler = await startReferenceHandler(db, { variant, port: arg('port') ? Number(arg('port')) : 0 });
process.stdout.write(`${JSON.stringify({ url: handler.url, variant })}\n`);
const stop = async (): Promise<void> => {
  await handler.close();
  await db.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
