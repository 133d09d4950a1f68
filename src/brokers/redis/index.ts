// Over 300 lines: the one Redis data API of every framework (lists, BullMQ, clusters) and its run liveness.
import type { Redis } from 'ioredis';
import type { RedisBrokerConfig, WithUrl } from '../../config/brokers.js';
import { TaskreconError } from '../../errors.js';
import type {
  BatchLanding,
  BrokerCheck,
  BrokerClient,
  BrokerReport,
  FailedJobDetail,
  FailedJobRef,
  FailedRetryOutcome,
  MovedJob,
  MoveRequest,
  MoveResult,
  QueueFinding,
} from '../types.js';
import { forgetBatch, lookBatch } from './intents.js';
import { displayRedisUrl } from './connection.js';
import { bullmqOnCluster, clusterReplyError, connectRedisNodes, type RedisNodes } from './cluster.js';
import { checkOneSlot } from './cluster-moves.js';
import { keyFormatFindings, queueFindings, serverFindings } from './findings.js';
import { countQueue, discover, queuesToReport, redisNow } from './inspect.js';
import { describeOther, pushEnd, queueKeys, type RedisLayout } from './layout.js';
import { moveJobs, recoverJobs, type RecoverRequest } from './move.js';
import { redisDoctor } from './doctor.js';
import { readWeakestSettings } from './server.js';
import { bullmqApi } from './bullmq-api.js';
import { nameRun, runAlive } from './run-name.js';

/**
 * The Redis data API (`BrokerClient`): counts and findings, atomic moves, the framework's migrate,
 * doctor checks. One connection per broker, opened by `openRedisBroker` and closed by the caller.
 */
export class RedisBroker implements BrokerClient {
  readonly kind = 'redis' as const;
  readonly layout: RedisLayout;
  readonly display: string;

  constructor(
    readonly name: string,
    readonly config: WithUrl<RedisBrokerConfig>,
    readonly nodes: RedisNodes,
  ) {
    const prefix = config.prefix ?? (config.framework === 'bullmq' ? 'bull' : '');
    this.layout = { framework: config.framework, prefix, lists: config.lists };
    this.display = displayRedisUrl(config.url);
  }

  /** The one server, or on a cluster the first master (TIME, INFO, CONFIG GET; BullMQ refuses clusters). */
  get client(): Redis {
    return this.nodes.any;
  }

  /** Where the moves of these keys run: the one server, or the master of their one slot. */
  private targetFor(key: string) {
    return {
      client: this.nodes.forKey(key),
      layout: this.layout,
      broker: this.name,
      cluster: this.nodes.cluster,
    };
  }

  /** Runs `work`, turning a cluster's MOVED / ASK / CLUSTERDOWN reply into exit 3 with a hint. */
  private async onNodes<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw clusterReplyError(error, `broker ${this.name}`) ?? error;
    }
  }

  private get bullmq() {
    return { client: this.client, prefix: this.layout.prefix, broker: this.name };
  }

  /** The layout's queues that exist, by SCAN; exit 3 when the layout matches no key and none is configured. */
  async queueNames(): Promise<string[]> {
    return this.onNodes(() => this.queueNamesOnNodes());
  }

  private async queueNamesOnNodes(): Promise<string[]> {
    if (this.layout.framework === 'bullmq')
      return (await bullmqApi()).bullmqQueueNames(this.client, this.layout.prefix);
    const found = await discover(this.nodes, this.layout);
    return [...found.found.keys()].sort();
  }

  async inspect(options: {
    peek: number;
    nowEpoch?: number;
    failedDetail?: number;
  }): Promise<{ report: BrokerReport; findings: QueueFinding[] }> {
    return this.onNodes(() => this.inspectOnNodes(options));
  }

  private async inspectOnNodes(options: {
    peek: number;
    failedDetail?: number;
  }): Promise<{ report: BrokerReport; findings: QueueFinding[] }> {
    // The broker's own clock decides what is due, as the workers' migrate does against the score.
    if (this.layout.framework === 'bullmq') return this.inspectBullmq(options.failedDetail ?? options.peek);
    const nowEpoch = await redisNow(this.client);
    const discovery = await discover(this.nodes, this.layout);
    const configured = this.config.queues ?? [];
    if (discovery.found.size === 0 && configured.length === 0 && this.layout.framework !== 'list') {
      throw this.noKeys(discovery.others.map(describeOther));
    }
    const takeEnd = pushEnd(this.layout.framework) === 'right' ? 'left' : 'right';
    const findings: QueueFinding[] = [];
    const report: BrokerReport = {
      name: this.name,
      kind: 'redis',
      framework: this.layout.framework,
      url: this.display,
      queues: [],
    };
    for (const keys of queuesToReport(this.layout, configured, discovery.found.keys())) {
      const { stats, reservedLowestEpoch } = await countQueue(
        this.nodes,
        keys,
        nowEpoch,
        options.peek,
        takeEnd,
      );
      report.queues.push(stats);
      findings.push(
        ...queueFindings(this.name, stats, {
          configured,
          nowEpoch,
          reservedOldestEpoch: reservedLowestEpoch,
        }),
      );
    }
    const settings = await readWeakestSettings(this.nodes.masters.map((m) => m.client));
    findings.push(...serverFindings(this.name, settings, discovery.keysWithTtl.length > 0));
    findings.push(...keyFormatFindings(this.name, this.layout.framework, discovery.others));
    return { report, findings };
  }

  /** BullMQ: its own counts per queue, stalled jobs, the first `failedDetail` failed jobs in detail. */
  private async inspectBullmq(
    failedDetail: number,
  ): Promise<{ report: BrokerReport; findings: QueueFinding[] }> {
    const prefix = this.layout.prefix;
    const { bullmqQueueNames, noBullmqQueues, otherBullmqPrefixes, bullmqQueueStats, bullmqFindings } =
      await bullmqApi();
    const found = await bullmqQueueNames(this.client, prefix);
    const configured = this.config.queues ?? [];
    if (found.length === 0) {
      throw noBullmqQueues(this.name, prefix, this.display, await otherBullmqPrefixes(this.client, prefix));
    }
    const report: BrokerReport = {
      name: this.name,
      kind: 'redis',
      framework: 'bullmq',
      url: this.display,
      queues: [],
    };
    const findings: QueueFinding[] = [];
    for (const queue of [...new Set([...configured, ...found])].sort()) {
      const stats = await bullmqQueueStats(this.client, prefix, queue, failedDetail);
      report.queues.push(stats);
      findings.push(...bullmqFindings(this.name, stats));
    }
    const settings = await readWeakestSettings(this.nodes.masters.map((m) => m.client));
    findings.push(...serverFindings(this.name, settings, false));
    return { report, findings };
  }

  private noKeys(others: string[]): TaskreconError {
    const layout =
      this.layout.framework === 'laravel'
        ? `laravel with prefix '${this.layout.prefix}'`
        : this.layout.framework;
    const seen = [...new Set(others)];
    return new TaskreconError(
      `broker ${this.name}: no queue key of the ${layout} layout is in ${this.display}${seen.length ? ` (keys of ${seen.join('; ')} are)` : ''}`,
      {
        code: 'USAGE',
        hint: seen.length
          ? 'Set the framework / prefix the application writes with (--framework, --prefix, or `framework:` / `prefix:` of the broker).'
          : 'Check the DB index in the URL and the prefix; or list the queues workers consume in `queues:` of the broker so empty ones are reported too.',
      },
    );
  }

  async move(request: MoveRequest): Promise<MoveResult> {
    if (this.layout.framework === 'bullmq') return (await bullmqApi()).moveFailed(this.bullmq, request);
    const keys = checkOneSlot(this, request);
    return this.onNodes(() => moveJobs(this.targetFor(keys.from), request));
  }

  async recover(request: RecoverRequest): Promise<MoveResult[]> {
    if (this.layout.framework === 'bullmq') {
      const { noBullmqQueues, otherBullmqPrefixes, recoverStalled } = await bullmqApi();
      if ((await this.queueNames()).length === 0) {
        throw noBullmqQueues(
          this.name,
          this.layout.prefix,
          this.display,
          await otherBullmqPrefixes(this.client, this.layout.prefix),
        );
      }
      return recoverStalled(this.bullmq, request, this.config.maxStalledCount);
    }
    let queues: string[];
    if (request.from !== undefined) queues = [request.from];
    else {
      queues = await this.queueNames();
      if (queues.length === 0) throw this.noKeys([]);
    }
    if (request.from !== undefined) {
      const names = await this.queueNames();
      if (!names.includes(request.from)) {
        throw new TaskreconError(`queue ${request.from} does not exist on broker ${this.name}`, {
          code: 'USAGE',
          hint: `Queues found: ${names.join(', ') || 'none'}. Nothing was moved.`,
        });
      }
    }
    for (const queue of queues) checkOneSlot(this, { from: queue });
    const first = queueKeys(this.layout, queues[0] ?? '');
    return this.onNodes(() =>
      recoverJobs(this.targetFor(first.ready), request, queues, (keys) => this.targetFor(keys.ready)),
    );
  }

  async bullmqQueues(): Promise<string[]> {
    if (this.layout.framework !== 'bullmq')
      throw new TaskreconError(
        `broker ${this.name} is no BullMQ broker (framework ${this.layout.framework})`,
        {
          code: 'USAGE',
          hint: 'Sweep rules with `broker:` name brokers with framework: bullmq.',
        },
      );
    const { bullmqQueueNames, noBullmqQueues, otherBullmqPrefixes } = await bullmqApi();
    const names = await bullmqQueueNames(this.client, this.layout.prefix);
    if (names.length === 0)
      throw noBullmqQueues(
        this.name,
        this.layout.prefix,
        this.display,
        await otherBullmqPrefixes(this.client, this.layout.prefix),
      );
    return names;
  }

  async failedJobs(queue: string, start: number, count: number): Promise<FailedJobDetail[]> {
    return (await bullmqApi()).failedPage(this.client, this.layout.prefix, queue, start, count);
  }

  async retryFailedJob(queue: string, job: FailedJobRef): Promise<FailedRetryOutcome> {
    return (await bullmqApi()).retryIfStillFailed(this.bullmq, queue, job);
  }

  readonly jobState = async (queue: string, jobId: string) =>
    (await bullmqApi()).jobState(this.bullmq, queue, jobId);
  /** Names every master's connection after the run; so the first master tells for the cluster. */
  readonly nameRun = (runId: string) =>
    nameRun(
      this.nodes.masters.map((m) => m.client),
      runId,
    );
  readonly runAlive = (runId: string) => runAlive(this.client, runId);
  readonly finishMove = async (queue: string, id: string, at: number | null) =>
    (await bullmqApi()).finishMove(this.bullmq, queue, id, at);

  async lookBatch(batch: BatchLanding): Promise<MovedJob[] | null> {
    return this.onNodes(() => lookBatch(this.nodes, batch));
  }

  async forgetBatch(batch: BatchLanding): Promise<void> {
    await this.onNodes(() => forgetBatch(this.nodes, batch));
  }

  async doctor(): Promise<BrokerCheck[]> {
    return redisDoctor(this);
  }

  async close(): Promise<void> {
    await this.nodes.close();
  }
}

/** Opens a Redis broker: connected, authenticated, DB selected — or exit 3 with a hint. */
export async function openRedisBroker(
  name: string,
  config: WithUrl<RedisBrokerConfig>,
): Promise<RedisBroker> {
  if (config.framework === 'list' && !config.lists) {
    throw new TaskreconError(
      `broker ${name}: framework list needs the two names of the ready list and the delay set`,
      {
        code: 'CONFIG_INVALID',
        hint: 'Add `lists: { ready: async_queue, delayed: async_delay_queue }` to the broker, or pass --lists READY,DELAYED.',
      },
    );
  }
  const nodes = await connectRedisNodes(config.url, `broker ${name}`);
  if (nodes.cluster && config.framework === 'bullmq') {
    await nodes.close();
    throw bullmqOnCluster(name, config.url);
  }
  return new RedisBroker(name, config, nodes);
}
