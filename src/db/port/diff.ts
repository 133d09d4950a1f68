import type * as checksum from '../sql/diff-checksum.js';
import type * as merge from '../sql/diff-merge.js';
import type * as readonly from '../sql/diff-readonly.js';
import type * as schema from '../sql/diff-schema.js';
import type * as diff from '../sql/diff.js';
import type * as effect from '../sql/effect.js';

/**
 * What diff reads: the same-server join walk, the merge walk's range digests, the cross-server
 * checksum streams, the schema probes of its plan, all inside read-only transactions.
 */
export interface DiffStore {
  withReadOnly: typeof readonly.withReadOnly;

  // Schema probes.
  columnCollation: typeof schema.columnCollation;
  integerPrimaryKey: typeof schema.integerPrimaryKey;
  probeWhere: typeof schema.probeWhere;
  bizTypeHasTasks: typeof schema.bizTypeHasTasks;
  spaceWeight: typeof merge.spaceWeight;

  // The join walk.
  taskIdRange: typeof diff.taskIdRange;
  nextTaskId: typeof diff.nextTaskId;
  missingChunk: typeof diff.missingChunk;
  missingByIds: typeof diff.missingByIds;
  unsettledCandidates: typeof diff.unsettledCandidates;
  countChunkTasks: typeof diff.countChunkTasks;
  keySiblings: typeof diff.keySiblings;
  businessKeyBound: typeof diff.businessKeyBound;
  orphanChunk: typeof diff.orphanChunk;
  orphansByKeys: typeof diff.orphansByKeys;
  nullKeyBusinessRows: typeof diff.nullKeyBusinessRows;
  duplicateKeys: typeof diff.duplicateKeys;
  duplicateCandidates: typeof diff.duplicateCandidates;

  // The merge walk.
  businessWeights: typeof merge.businessWeights;
  taskWeights: typeof merge.taskWeights;
  taskRangeDigest: typeof merge.taskRangeDigest;
  businessRangeDigest: typeof merge.businessRangeDigest;

  // The checksum walk.
  taskDigests: typeof checksum.taskDigests;
  businessDigests: typeof checksum.businessDigests;
  taskHashStream: typeof checksum.taskHashStream;
  businessHashStream: typeof checksum.businessHashStream;
  countTasks: typeof checksum.countTasks;
  notDoneHashes: typeof checksum.notDoneHashes;
  taskRows: typeof checksum.taskRows;
  businessRows: typeof checksum.businessRows;
  nullKeyTasks: typeof checksum.nullKeyTasks;

  // A task's effect before a retry.
  businessRowCounts: typeof effect.businessRowCounts;
  taskKeyCounts: typeof effect.taskKeyCounts;
}
