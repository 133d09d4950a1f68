import type { ChannelModel } from 'amqplib';
import type { RabbitBrokerConfig, WithUrl } from '../../config/brokers.js';
import type {
  BrokerCheck,
  BrokerClient,
  BrokerReport,
  MoveRequest,
  MoveResult,
  QueueFinding,
} from '../types.js';
import { openConnection, parseAmqpUrl, type AmqpTarget } from './connection.js';
import { doctorRabbit } from './doctor.js';
import { inspectRabbit } from './inspect.js';
import { ManagementApi } from './management.js';
import { moveRabbit } from './move.js';
import { declareRun, rabbitRunAlive, runConnectionName } from './run-name.js';

/**
 * The RabbitMQ data API: counts from passive declares (exact, immediate) and the management API
 * (unacked, durability, arguments, policies, bindings), a peeked sample's x-death, the topology
 * findings, and moves with publisher confirms. One AMQP connection, opened on first use.
 */
export class RabbitBroker implements BrokerClient {
  readonly kind = 'rabbitmq' as const;
  readonly target: AmqpTarget;
  readonly api: ManagementApi | undefined;
  private connection: Promise<ChannelModel> | undefined;
  /** The run this process's connection is named after (see `nameRun`). */
  private runName: string | undefined;

  constructor(
    readonly name: string,
    readonly config: WithUrl<RabbitBrokerConfig>,
  ) {
    this.target = parseAmqpUrl(config.url);
    this.api = config.api
      ? new ManagementApi(config.api, this.target.vhost, {
          username: this.target.username,
          password: this.target.password,
        })
      : undefined;
  }

  /** The shared connection (exit 3 with a hint when the broker cannot be reached or refuses the login). */
  connect(): Promise<ChannelModel> {
    this.connection ??= openConnection(this.target, this.runName);
    const pending = this.connection;
    pending.catch(() => {
      if (this.connection === pending) this.connection = undefined;
    });
    return pending;
  }

  /**
   * Names the connection after the run (reconnecting when it was opened unnamed) and declares the
   * run's exclusive queue: other moves leave this run's open batches to it while it is connected.
   */
  async nameRun(runId: string): Promise<void> {
    const name = runConnectionName(runId);
    if (this.runName !== name) {
      await this.close();
      this.runName = name;
    }
    await declareRun(await this.connect(), runId);
  }

  async runAlive(runId: string): Promise<boolean | undefined> {
    return rabbitRunAlive(await this.connect(), runId);
  }

  private base() {
    return {
      broker: this.name,
      target: this.target,
      api: this.api,
      queues: this.config.queues,
      maxRetries: this.config.maxRetries,
    };
  }

  async inspect(options: {
    peek: number;
    nowEpoch: number;
  }): Promise<{ report: BrokerReport; findings: QueueFinding[] }> {
    // The API is asked first: a wrong vhost or login is reported before anything touches a queue.
    if (this.api) await this.api.checkVhost();
    const connection = await this.connect();
    return inspectRabbit({ ...this.base(), connection, peek: options.peek });
  }

  async move(request: MoveRequest): Promise<MoveResult> {
    const connection = await this.connect();
    return moveRabbit({ broker: this.name, target: this.target, connection, request });
  }

  doctor(): Promise<BrokerCheck[]> {
    return doctorRabbit(() => this.connect(), this.target, this.base());
  }

  async close(): Promise<void> {
    const pending = this.connection;
    this.connection = undefined;
    if (!pending) return;
    const connection = await pending.catch(() => undefined);
    await connection?.close().catch(() => undefined);
  }
}

export function openRabbitBroker(name: string, config: WithUrl<RabbitBrokerConfig>): RabbitBroker {
  return new RabbitBroker(name, config);
}
