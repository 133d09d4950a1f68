import { newSecret } from './security/secret.js';

export interface FlashMessage {
  kind: 'ok' | 'error';
  text: string;
}

/**
 * One-time messages carried across a POST's redirect (the outcome of an action) by a random key in
 * the URL, so that no message text travels in the URL and a reload does not post again.
 */
export class Flashes {
  private readonly messages = new Map<string, FlashMessage>();

  put(message: FlashMessage): string {
    const key = newSecret().slice(0, 12);
    this.messages.set(key, message);
    if (this.messages.size > 100) this.messages.delete(this.messages.keys().next().value as string);
    return key;
  }

  take(key: string | undefined): FlashMessage | undefined {
    if (!key) return undefined;
    const message = this.messages.get(key);
    this.messages.delete(key);
    return message;
  }
}
