import { Args, Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import { showTask, type ShowResult } from '../verbs/show/index.js';
import { renderShow } from '../render/show.js';
import { splitShardId } from '../core/shards.js';
import { shardFlags } from '../flags.js';

export default class Show extends BaseCommand<typeof Show> {
  static override readOnly = true;
  static override summary =
    'Show one task: every field, the payload pretty-printed, the whole last error and its audit history.';
  static override description =
    'Reads only. A payload that is not JSON is shown as text; control characters in any value are shown as escapes, ' +
    'and on a terminal a very long payload or error is cut (--full, a pipe or --json shows all). Exit 3 when no task has the id.';
  static override examples = [
    '<%= config.bin %> show 42 --db mysql://app@127.0.0.1:3306/shop --profile async-task',
    '<%= config.bin %> show 7 --source failed --full',
    '<%= config.bin %> show 5f0c1a2e-8d3b-4a8e-9c1d-2b7e4f6a9d10 --profile laravel-failed-jobs',
    '<%= config.bin %> show 42 --json',
    '<%= config.bin %> show shop_0.async_task_3:42 --source tasks',
  ];

  static override args = {
    id: Args.string({
      description:
        'The task id as scan lists it, or its event id (Laravel uuid, async_task event_id); on a sharded source SHARD:ID.',
      required: true,
    }),
  };

  static override flags = {
    ...shardFlags,
    full: Flags.boolean({ summary: 'On a terminal too, print the payload and last error whole.' }),
  };

  async run(): Promise<ShowResult> {
    let id = this.args.id;
    let shard: string | undefined;
    const opened = await this.openSourceOrShards(this.flags, {
      only: (names) => ({ shard, id } = splitShardId(id, names)).shard,
    });
    const result = await showTask(opened.source, id);
    if (shard !== undefined) result.task = { shard, ...result.task };
    if (!this.jsonEnabled()) this.log(renderShow(result, { full: this.flags.full }));
    return result;
  }
}
