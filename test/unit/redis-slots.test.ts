import { describe, expect, it } from 'vitest';
import {
  hashTag,
  keySlot,
  parseClusterNodes,
  tagForSameSlot,
  uncoveredSlots,
} from '../../src/brokers/redis/slots.js';

// The slot math against Redis Cluster's specification (its CRC16 test vector and hash-tag rules);
// the integration test compares it with CLUSTER KEYSLOT on a live cluster.

describe('Redis Cluster slots', () => {
  it('hashes as the cluster specification says', () => {
    // CRC16-XMODEM("123456789") = 0x31C3.
    expect(keySlot('123456789')).toBe(0x31c3 % 16384);
    expect(hashTag('{user1000}.following')).toBe('user1000');
    expect(hashTag('foo{}{bar}')).toBeNull();
    expect(hashTag('foo{{bar}}zap')).toBe('{bar');
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    // Negative: different tags, different slots.
    expect(keySlot('{a}:x')).not.toBe(keySlot('{b}:x'));
  });

  it('finds a tag that puts a marker in the slot of any key', () => {
    for (const key of ['queues:default', '{queues:q1}:delayed', 'a}b{', 'x{}y', '}{']) {
      const tag = tagForSameSlot(key);
      expect([key, keySlot(`taskrecon:intent:{${tag}}:run:1`)]).toEqual([key, keySlot(key)]);
    }
  });

  it('reads CLUSTER NODES and finds unserved slots', () => {
    const nodes = parseClusterNodes(
      [
        'a1 127.0.0.1:7101@17101 myself,master - 0 0 1 connected 0-5460',
        'b2 127.0.0.1:7102@17102 master,fail - 0 0 2 disconnected 5461-10922 [10923->-c3]',
        'c3 127.0.0.1:7103@17103,host.example master - 0 0 3 connected 10924-16383',
        'd4 127.0.0.1:7104@17104 slave a1 0 0 1 connected',
      ].join('\n'),
    );
    expect(nodes.map((n) => [n.host, n.port, n.connected, n.slots])).toEqual([
      ['127.0.0.1', 7101, true, [[0, 5460]]],
      ['127.0.0.1', 7102, false, [[5461, 10922]]],
      ['127.0.0.1', 7103, true, [[10924, 16383]]],
      ['127.0.0.1', 7104, true, []],
    ]);
    expect(nodes[1]?.flags).toContain('fail');
    expect(uncoveredSlots(nodes)).toEqual([[10923, 10923]]);
    expect(uncoveredSlots([])).toEqual([[0, 16383]]);
  });
});
