import type { Channel, Message } from 'amqplib';

/** Delivery tags from `first` to `last`, both in. */
type Run = [first: number, last: number];

/** `runs` in order, those that touch or overlap merged into one (new arrays: the input is left as it is). */
function merged(runs: readonly Run[]): Run[] {
  const out: Run[] = [];
  for (const [first, end] of [...runs].sort((a, b) => a[0] - b[0])) {
    const run = out[out.length - 1];
    if (run && first <= run[1] + 1) run[1] = Math.max(run[1], end);
    else out.push([first, end]);
  }
  return out;
}

/** Consecutive tags as runs, in order. */
const runsOf = (tags: readonly number[]): Run[] => merged(tags.map((tag): Run => [tag, tag]));

/**
 * The acks of one source channel, sent with as few frames as is safe. A basic.ack with `multiple`
 * settles every delivery tag up to its own that the channel still holds, so it may only be sent
 * when every tag below the last of a batch is either in that batch or settled already (acked or
 * nacked in frames sent before it, which the broker handles first). Otherwise — an earlier batch
 * still waiting for its confirms, a message a filter holds back between them — each message is
 * acked alone. Every ack and nack of the channel's messages while the ledger is in use goes
 * through it, so that it knows what is settled. What is settled above the lowest open tag is kept
 * as runs of tags: as many as there are gaps, not as many as there are messages.
 */
export class AckLedger {
  /** Every tag up to this one is settled. */
  private floor = 0;
  /** Settled tags above the floor, as runs in order, neither touching nor overlapping. */
  private runs: Run[] = [];

  constructor(private readonly channel: Channel) {}

  /** Acks `messages`, delivered on this channel and not settled yet: in one frame when that is safe. */
  ack(messages: readonly Message[]): void {
    const first = messages[0];
    if (!first) return;
    let last = first;
    for (const m of messages) if (m.fields.deliveryTag > last.fields.deliveryTag) last = m;
    const mine = runsOf(messages.map((m) => m.fields.deliveryTag));
    if (this.covers(last.fields.deliveryTag, mine)) this.channel.ack(last, true);
    else for (const m of messages) this.channel.ack(m);
    this.settle(mine);
  }

  /** Nacks `messages` one by one, put back at the source when `requeue`. */
  nack(messages: readonly Message[], requeue: boolean): void {
    for (const m of messages) this.channel.nack(m, false, requeue);
    this.settle(runsOf(messages.map((m) => m.fields.deliveryTag)));
  }

  /** True when every tag above the floor up to `last` is in `mine` or settled already. */
  private covers(last: number, mine: readonly Run[]): boolean {
    const lowest = merged([...mine, ...this.runs])[0];
    return lowest !== undefined && lowest[0] <= this.floor + 1 && lowest[1] >= last;
  }

  private settle(mine: readonly Run[]): void {
    const runs = merged([...this.runs, ...mine]);
    const lowest = runs[0];
    if (lowest && lowest[0] <= this.floor + 1) {
      this.floor = Math.max(this.floor, lowest[1]);
      runs.shift();
    }
    this.runs = runs;
  }
}
