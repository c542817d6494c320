/**
 * The stack config an import is building, with where every value came from: a config problem found
 * later (by the schema) is reported against the `.env` key or fleet.json field the operator wrote, not
 * only the config path they never saw.
 */
import { renderPath, type PathSegment } from "../config/errors";

export interface Unmapped {
  /** The `.env` key or `fleet.json` field. */
  readonly from: string;
  readonly reason: string;
}

export interface Problem {
  readonly from: string;
  readonly message: string;
}

export interface SecretValue {
  /** Config key, a path when `path` is set (`sshPasswords.gpu-a`). */
  readonly key: string;
  readonly path: boolean;
  readonly value: string;
  readonly from: string;
}

export class Draft {
  readonly config: Record<string, unknown> = {};
  readonly secrets: SecretValue[] = [];
  readonly unmapped: Unmapped[] = [];
  readonly problems: Problem[] = [];
  /** Rendered config path → the source that set it. */
  readonly origin = new Map<string, string>();
  /** Sources that were read into the config (for the report). */
  readonly used: Array<{ from: string; to: string }> = [];

  set(path: readonly PathSegment[], value: unknown, from: string): void {
    let node = this.config as Record<string | number, unknown>;
    for (let i = 0; i < path.length - 1; i++) {
      const key = path[i];
      if (node[key] === undefined) node[key] = typeof path[i + 1] === "number" ? [] : {};
      node = node[key] as Record<string | number, unknown>;
    }
    node[path[path.length - 1]] = value;
    const rendered = renderPath(path);
    this.origin.set(rendered, from);
    this.used.push({ from, to: rendered });
  }

  get(path: readonly PathSegment[]): unknown {
    let node: unknown = this.config;
    for (const key of path) {
      if (node === null || typeof node !== "object") return undefined;
      node = (node as Record<string | number, unknown>)[key];
    }
    return node;
  }

  secret(key: string, value: string, from: string, path = false): void {
    this.secrets.push({ key, path, value, from });
    this.used.push({ from, to: `${key} (secret)` });
  }

  skip(from: string, reason: string): void {
    this.unmapped.push({ from, reason });
  }

  problem(from: string, message: string): void {
    this.problems.push({ from, message });
  }

  /** The source behind a config path: the longest set path that is a prefix of it. */
  sourceOf(rendered: string): string | undefined {
    let best: string | undefined;
    let bestLength = -1;
    for (const [path, from] of this.origin) {
      const prefix = rendered === path || rendered.startsWith(path + ".") || rendered.startsWith(path + "[");
      if (prefix && path.length > bestLength) {
        best = from;
        bestLength = path.length;
      }
    }
    return best;
  }
}
