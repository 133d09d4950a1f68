/** ack: acknowledgements of queue findings, with an expiry and a reason, audited. */
export { ackRequest, ACKABLE_CODES, BROKER_WIDE_CODES, MAX_ACK_MS, type AckRequest } from './request.js';
export { addAck, listAcks, removeAck, type AckEntry, type AckListResult, type AckResult } from './ack.js';
