import pg from 'pg';
import type { Logger } from 'pino';

export interface ChannelListenerDeps {
  /** The connection settings: a pooled client cannot keep listening, so this is a connection of its own. */
  connection: pg.ClientConfig;
  channel: string;
  log: Logger;
  /** How long to wait before connecting again after the connection failed or was lost. */
  retryMs: number;
  onNotification(payload: string): void;
  /** Listening (again): what was committed while it was not may have been missed. */
  onListening?(): void;
  /** The connection was lost (or could not be made); nothing is heard until onListening. */
  onLost?(): void;
}

/**
 * LISTEN on one channel over a connection of its own, reconnecting for as long as it runs: a
 * database restart or failover interrupts it, never ends it.
 */
export class ChannelListener {
  readonly #deps: ChannelListenerDeps;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(deps: ChannelListenerDeps) {
    this.#deps = deps;
  }

  get listening(): boolean {
    return this.#client !== undefined;
  }

  /** Resolves once the first attempt to listen has succeeded or failed (it is retried then). */
  async start(): Promise<void> {
    await this.#listen();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #listen(): Promise<void> {
    if (this.#stopped) return;
    const { connection, channel, log, retryMs } = this.#deps;
    const client = new pg.Client(connection);
    let lost = false;
    // One failure can both reject the pending query and emit 'error': give up on a client once.
    const reconnectLater = (err: unknown, message: string) => {
      if (lost) return;
      lost = true;
      log.warn({ err, channel }, message);
      if (this.#client === client) {
        this.#client = undefined;
        this.#deps.onLost?.();
      }
      client.end().catch(() => undefined);
      if (!this.#stopped) this.#retry = setTimeout(() => void this.#listen(), retryMs);
    };
    client.on('notification', (message) => {
      if (message.channel === channel) this.#deps.onNotification(message.payload ?? '');
    });
    client.on('error', (err) => reconnectLater(err, 'listener lost its database connection'));
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      reconnectLater(err, 'listener could not connect to the database');
      return;
    }
    // stop() may have run while this connected; it closed the client it knew of, not this one.
    if (this.#stopped) {
      await client.end().catch(() => undefined);
    } else if (!lost) {
      this.#client = client;
      this.#deps.onListening?.();
    }
  }
}
