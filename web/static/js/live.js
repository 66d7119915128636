// Live instance events over graphql-transport-ws, in plain JavaScript.
//
// One websocket per session carries two subscriptions, three for an
// operator: instanceEvents(includeCurrent: true), the current state of
// every instance the caller may see, then every change; sandboxEvents,
// every step of the lives of the sandboxes the caller may see; and, for an
// operator, providerBootstrapEvents, every change of every provider
// bootstrap (pages read the current state of those two themselves, and
// again on a resync). When the socket drops, the client
// says so (status "down"), reconnects with backoff, subscribes again with
// includeCurrent and tells the pages to re-read what they show (onResync).

import { FIELDS } from './sandboxes.js';

export const EVENTS = `subscription Live { instanceEvents(includeCurrent: true) {
  type version snapshot instance { id name state desiredState stateReason addresses hostCertified hostCertValidBefore version updatedAt } } }`;

// SANDBOX_EVENTS is the sandbox subscription; the sandbox is sent as the
// step left it, with the fields the sandbox pages read.
export const SANDBOX_EVENTS = `subscription LiveSandboxes { sandboxEvents {
  type version reason at snapshot sandbox { ${FIELDS} } } }`;

// BOOTSTRAP_EVENTS is the operators' provider bootstrap subscription, with
// the fields the bootstraps page shows.
export const BOOTSTRAP_FIELDS = `id name state stateReason serverType image deadline createdAt updatedAt version
  providerAccount { name provider } pool { name } host { id name }`;
export const BOOTSTRAP_EVENTS = `subscription LiveBootstraps { providerBootstrapEvents {
  type version providerBootstrap { ${BOOTSTRAP_FIELDS} } } }`;

const BACKOFF = [500, 1000, 2000, 4000, 8000, 15000];
const QUIET = 40000; // the server pings every 15 s; this long without a frame is a dead link

export class Live {
  // token: the bearer token. handlers: onStatus(status), onEvent(event),
  // onSandboxEvent(event), onBootstrapEvent(event), onResync(),
  // onAuthFailed(reason). operator: the caller may subscribe to provider
  // bootstrap events (a member is refused).
  constructor(token, handlers, { operator = false } = {}) {
    this.token = token;
    this.h = handlers;
    this.subs = operator ? [EVENTS, SANDBOX_EVENTS, BOOTSTRAP_EVENTS] : [EVENTS, SANDBOX_EVENTS];
    this.ws = null;
    this.attempt = 0;
    this.everLive = false;
    this.stopped = true;
    this.timer = 0;
    this.status = { state: 'connecting' };
    this.onOnline = () => this.now();
    this.watchdog = 0;
  }

  start() {
    this.stopped = false;
    window.addEventListener('online', this.onOnline);
    this.watchdog = setInterval(() => this.check(), 5000);
    this.connect();
  }

  // stop closes the socket for good (log out).
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.watchdog);
    window.removeEventListener('online', this.onOnline);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      try {
        this.subs.forEach((_, i) => ws.send(JSON.stringify({ id: String(i + 1), type: 'complete' })));
      } catch {
        // already closing
      }
      ws.close(1000, 'logged out');
    }
  }

  // now reconnects at once when waiting to.
  now() {
    if (this.stopped || this.ws) return;
    clearTimeout(this.timer);
    this.connect();
  }

  setStatus(s) {
    this.status = s;
    this.h.onStatus?.(s);
  }

  connect() {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
    let ws;
    try {
      ws = new WebSocket(url, 'graphql-transport-ws');
    } catch (e) {
      this.lost(0, String(e.message || e));
      return;
    }
    this.ws = ws;
    this.lastFrame = Date.now();
    this.acked = false;
    this.setStatus({ state: this.everLive ? 'reconnecting' : 'connecting', attempt: this.attempt });
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${this.token}` } }));
    };
    ws.onmessage = (m) => {
      if (this.ws !== ws) return;
      this.lastFrame = Date.now();
      let msg;
      try {
        msg = JSON.parse(m.data);
      } catch {
        return;
      }
      switch (msg.type) {
        case 'connection_ack': {
          this.acked = true;
          this.attempt = 0;
          this.subs.forEach((query, i) => ws.send(JSON.stringify({ id: String(i + 1), type: 'subscribe', payload: { query, variables: {} } })));
          const again = this.everLive;
          this.everLive = true;
          this.setStatus({ state: 'live', resynced: again });
          if (again) this.h.onResync?.();
          break;
        }
        case 'next': {
          const data = msg.payload?.data;
          if (data?.instanceEvents) this.h.onEvent?.(data.instanceEvents);
          else if (data?.sandboxEvents) this.h.onSandboxEvent?.(data.sandboxEvents);
          else if (data?.providerBootstrapEvents) this.h.onBootstrapEvent?.(data.providerBootstrapEvents);
          else if (msg.payload?.errors?.length) this.failed(msg.payload.errors);
          break;
        }
        case 'error':
          this.failed(msg.payload);
          break;
        case 'complete':
          // The server ended the subscription: start over.
          this.drop(ws, 1000, 'the server ended the subscription');
          break;
        case 'ping':
          ws.send(JSON.stringify({ type: 'pong' }));
          break;
        default:
      }
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.closed(e.code, e.reason);
    };
  }

  failed(errors) {
    const list = Array.isArray(errors) ? errors : [errors];
    const code = list[0]?.extensions?.code;
    if (code === 'UNAUTHENTICATED') {
      this.stop();
      this.h.onAuthFailed?.('Your token is no longer valid.');
      return;
    }
    this.drop(this.ws, 1000, list[0]?.message || 'the subscription failed');
  }

  // drop gives up on ws at once (its close may never come on a dead link).
  drop(ws, code, reason) {
    if (!ws || this.ws !== ws) return;
    this.ws = null;
    try {
      ws.close(code === 1000 ? 1000 : 4000, reason.slice(0, 100));
    } catch {
      // closing already
    }
    this.closed(code, reason);
  }

  check() {
    if (this.ws && Date.now() - this.lastFrame > QUIET) this.drop(this.ws, 4000, 'no word from the server for 40 s');
  }

  closed(code, reason) {
    if (this.stopped) return;
    if (code === 4401) {
      this.stop();
      this.h.onAuthFailed?.('The server refused your token: it is unknown, revoked or expired.');
      return;
    }
    this.lost(code, reason);
  }

  lost(code, reason) {
    let delay = BACKOFF[Math.min(this.attempt, BACKOFF.length - 1)];
    if (code === 4008) delay = this.attempt === 0 ? 100 : delay; // fell behind: resync at once
    if (code === 4429) delay = Math.max(delay, 15000); // too many connections
    delay = Math.round(delay * (1 + Math.random() * 0.3));
    this.attempt += 1;
    const why = {
      4008: 'the connection fell behind the event stream',
      4429: 'too many connections for this token',
      1006: 'the connection was cut',
    }[code] || reason || (code ? `closed with code ${code}` : 'could not connect');
    this.setStatus({ state: 'down', code, reason: why, retryAt: Date.now() + delay, attempt: this.attempt, everLive: this.everLive });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.stopped) this.connect();
    }, delay);
  }
}
