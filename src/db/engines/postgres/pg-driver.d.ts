/**
 * The part of node-postgres (`pg`), `pg-cursor` and `pg-copy-streams` this engine uses; none ships its
 * own type declarations.
 */
declare module 'pg' {
  export interface FieldDef {
    name: string;
    dataTypeID: number;
  }
  export interface QueryResult<R = unknown> {
    rows: R[];
    rowCount: number | null;
    command: string;
    fields: FieldDef[];
  }
  export interface CustomTypes {
    getTypeParser(oid: number, format?: string): (value: string) => unknown;
  }
  export interface QueryConfig {
    text: string;
    values?: unknown[];
    rowMode?: 'array';
    types?: CustomTypes;
  }
  export interface PoolConfig {
    connectionString?: string;
    host?: string;
    port?: number;
    user?: string;
    password?: string;
    database?: string;
    ssl?: boolean | { rejectUnauthorized: boolean };
    connectionTimeoutMillis?: number;
    max?: number;
    idleTimeoutMillis?: number;
    application_name?: string;
    options?: string;
    types?: CustomTypes;
    /** The client class a pool opens its sessions with. */
    Client?: new (config?: PoolConfig) => Client;
  }
  export interface Submittable {
    submit(connection: unknown): void;
  }
  export interface ClientBase {
    query<R = unknown>(text: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>>;
    query<T extends Submittable>(cursor: T): T;
  }
  export interface PoolClient extends ClientBase {
    release(destroy?: boolean | Error): void;
  }
  export class Client implements ClientBase {
    constructor(config?: PoolConfig);
    connect(): Promise<void>;
    end(): Promise<void>;
    query<R = unknown>(text: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>>;
    query<T extends Submittable>(cursor: T): T;
  }
  export class Pool {
    constructor(config?: PoolConfig);
    connect(): Promise<PoolClient>;
    query<R = unknown>(text: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>>;
    end(): Promise<void>;
    on(event: 'error', listener: (error: Error) => void): this;
  }
  export const types: {
    getTypeParser(oid: number, format?: string): (value: string) => unknown;
    setTypeParser(oid: number, parser: (value: string) => unknown): void;
  };
  const pg: { Pool: typeof Pool; Client: typeof Client; types: typeof types };
  export default pg;
}

declare module 'pg-cursor' {
  import type { CustomTypes, Submittable } from 'pg';
  export default class Cursor<R = unknown> implements Submittable {
    constructor(text: string, values?: unknown[], config?: { rowMode?: 'array'; types?: CustomTypes });
    submit(connection: unknown): void;
    read(rows: number): Promise<R[]>;
    close(): Promise<void>;
  }
}

declare module 'pg-copy-streams' {
  import type { Readable } from 'node:stream';
  import type { Submittable } from 'pg';
  /** `COPY … TO STDOUT` as a readable stream of the raw COPY data. */
  export class CopyToStreamQuery extends Readable implements Submittable {
    submit(connection: unknown): void;
    readonly rowCount: number;
  }
  export function to(text: string): CopyToStreamQuery;
}
