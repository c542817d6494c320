import type { Client } from "ssh2";

/**
 * How far a login got, so that a close or a timeout can say where it stopped: before TCP connected,
 * connected but silent (no SSH banner), banner seen but key exchange unfinished, or keys exchanged and
 * authentication pending. Each points at a different fix.
 */
export type LoginStage = "connecting" | "connected" | "banner" | "authenticating";

export class LoginProgress {
  stage: LoginStage;

  /** `overStream`: the login runs over an already open stream (a jump's forward), so TCP is up. */
  constructor(
    private readonly client: Client,
    overStream: boolean,
  ) {
    this.stage = overStream ? "connected" : "connecting";
    client.once("handshake", () => (this.stage = "authenticating"));
  }

  /**
   * Call right after `client.connect()`: ssh2 creates its socket there and keeps it on `_sock` (the
   * pool reaches for the same field to unreference idle connections). Only the first bytes matter: the
   * server's banner is the first thing it sends.
   */
  watchSocket(): void {
    const sock = (this.client as unknown as { _sock?: NodeJS.EventEmitter })._sock;
    sock?.once("connect", () => this.advance("connected"));
    sock?.once("data", () => this.advance("banner"));
  }

  private advance(to: LoginStage): void {
    const order: LoginStage[] = ["connecting", "connected", "banner", "authenticating"];
    if (order.indexOf(to) > order.indexOf(this.stage)) this.stage = to;
  }
}
