/**
 * Redis Cluster's key → hash slot mapping (CRC16-XMODEM of the key's hash tag, or of the whole key,
 * modulo 16384), and the parsing of `CLUSTER NODES`. Pure: no I/O.
 */

export const SLOTS = 16384;

const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (CRC_TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/** The hash tag of a key: what stands between its first `{` and the next `}`, when not empty. */
export function hashTag(key: string): string | null {
  const open = key.indexOf('{');
  if (open < 0) return null;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return null;
  return key.slice(open + 1, close);
}

/** The hash slot Redis Cluster keeps a key in (as `CLUSTER KEYSLOT`). */
export function keySlot(key: string): number {
  const hashed = hashTag(key) ?? key;
  return crc16(Buffer.from(hashed, 'utf8')) % SLOTS;
}

/**
 * A hash tag that puts a key of taskrecon's own (an intent marker) in the same slot as `key`: the
 * key's own tag, else the key itself when it has no braces, else a short tag found for the slot.
 */
export function tagForSameSlot(key: string): string {
  const tag = hashTag(key);
  if (tag !== null) return tag;
  if (!/[{}]/.test(key)) return key;
  const slot = keySlot(key);
  for (let i = 0; ; i++) {
    const candidate = `s${i.toString(36)}`;
    if (keySlot(candidate) === slot) return candidate;
  }
}

/** One node of `CLUSTER NODES`. */
export interface ClusterNode {
  id: string;
  host: string;
  port: number;
  flags: string[];
  /** Connected to the cluster bus (`link-state`). */
  connected: boolean;
  /** Slot ranges it serves, inclusive. */
  slots: Array<[number, number]>;
}

/** Parses `CLUSTER NODES` (`<id> <ip:port@cport> <flags> <master> … <link-state> <slot> …`). */
export function parseClusterNodes(text: string): ClusterNode[] {
  const nodes: ClusterNode[] = [];
  for (const line of text.split(/\r?\n/)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8) continue;
    const [id, address, flags, , , , , link, ...slotFields] = fields as [string, string, string, ...string[]];
    const hostPort = address.split('@')[0] ?? '';
    const at = hostPort.lastIndexOf(':');
    const slots: Array<[number, number]> = [];
    for (const field of slotFields) {
      // `[slot->-id]` / `[slot-<-id]`: a slot being migrated, still served by this node's range.
      if (field.startsWith('[')) continue;
      const [a, b] = field.split('-');
      slots.push([Number(a), Number(b ?? a)]);
    }
    nodes.push({
      id,
      host: hostPort.slice(0, at),
      port: Number(hostPort.slice(at + 1)),
      flags: flags.split(','),
      connected: link === 'connected',
      slots,
    });
  }
  return nodes;
}

/** `a-b, c` for messages. */
export function describeSlots(slots: ReadonlyArray<[number, number]>): string {
  return slots.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ');
}

/** Slot ranges no master serves, for the message that refuses an incomplete cluster. */
export function uncoveredSlots(masters: readonly ClusterNode[]): Array<[number, number]> {
  const covered = new Uint8Array(SLOTS);
  for (const node of masters) for (const [a, b] of node.slots) covered.fill(1, a, b + 1);
  const gaps: Array<[number, number]> = [];
  for (let s = 0; s < SLOTS; s++) {
    if (covered[s]) continue;
    const start = s;
    while (s + 1 < SLOTS && !covered[s + 1]) s++;
    gaps.push([start, s]);
  }
  return gaps;
}
