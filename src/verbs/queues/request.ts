import type { Context } from '../../context.js';
import { chooseBrokers, chooseOneBroker, type BrokerChoice, type BrokerInput } from '../../brokers/index.js';
import { usageError } from '../../errors.js';

/** What the broker flags say, parsed. */
export interface BrokerFlagValues {
  broker?: string;
  redis?: string;
  framework?: string;
  prefix?: string;
  lists?: string;
  rabbitmq?: string;
  api?: string;
  queue?: string[] | string;
}

function input(flags: BrokerFlagValues): BrokerInput {
  const queue =
    flags.queue === undefined ? undefined : Array.isArray(flags.queue) ? flags.queue : [flags.queue];
  return { ...flags, queue };
}

/** The brokers `queues` inspects. */
export function brokersFor(context: Context, flags: BrokerFlagValues): BrokerChoice[] {
  return chooseBrokers(input(flags), context.config.brokers);
}

/** The broker a move or recover works on. */
export function brokerFor(context: Context, flags: BrokerFlagValues): BrokerChoice {
  return chooseOneBroker(input(flags), context.config.brokers);
}

/** `--match-header NAME=VALUE`, parsed. */
export function parseMatchHeader(text: string | undefined): { name: string; value: string } | undefined {
  if (text === undefined) return undefined;
  const at = text.indexOf('=');
  if (at <= 0)
    throw usageError(
      `--match-header: '${text}' is not NAME=VALUE`,
      'Write e.g. --match-header x-biz-type=sms.',
    );
  return { name: text.slice(0, at), value: text.slice(at + 1) };
}
