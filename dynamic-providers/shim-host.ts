/**
 * What every provider shim does around a call, loaded by the shim (./shim-package) at call time from the
 * project the CLI runs in. It lives here, not in the shim, so that an edit here is never a change of the
 * installed package, and shims already in stack states (which load this file by path) run it too.
 */
import type * as pulumi from "@pulumi/pulumi";
import { createKeepingEvidence } from "../lib/evidence/pending";
import { setConfiguredHosts } from "../lib/ssh/configured-hosts";
import { currentHostsConfig } from "../lib/ssh/stack-config-file";
import { EVIDENCE_STORE, IMPLEMENTATION, withoutShimProps } from "../lib/shim-props";
import { stackEvidenceStore, withEvidenceLocation } from "../lib/evidence/stack-store";
import { parseEvidenceLocation } from "../lib/evidence/location";
import { evidenceRefsIn, moveEvidence } from "../lib/evidence/move";

/** The project's compile-cache loader: modules by their path from the project root. */
const load = (relativePath: string): unknown => (require("../tools/ts-require.js") as { load(p: string): unknown }).load(relativePath);

type Method = "check" | "diff" | "create" | "read" | "update" | "delete";

const implementationOf = (implementation: string): pulumi.dynamic.ResourceProvider => (load(implementation) as { provider: pulumi.dynamic.ResourceProvider }).provider;

/**
 * Every login prefers the host keys the stack's config pins now over those in a resource's old inputs
 * (lib/ssh/configured-hosts.ts): before each call, the hosts list is read again from the stack file.
 */
function pins(props: unknown): void {
  const stack = (props as { stack?: unknown } | undefined)?.stack;
  if (typeof stack !== "string") return;
  const hosts = currentHostsConfig(process.cwd(), stack);
  if (hosts !== undefined) setConfiguredHosts(hosts);
}

/**
 * The engine's protobuf encoder rejects `undefined` anywhere in a result ("Unexpected struct type"), so
 * every result goes through JSON once: absent fields are dropped, not sent.
 */
const plain = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;


/**
 * The SDK's provider host prints `${error}: ${error.stack}` to its stderr, which the CLI shows under the
 * Stack, for a failed check, diff, read or delete (not create or update), while the resource's own line
 * already carries the message: a refusal the provider worded would show twice, the second time with its
 * JavaScript frames. That one print of that one error is dropped; an error JavaScript itself raised (a
 * bug: TypeError, ReferenceError, ...) keeps its stack. The set is global, shared with the shims of
 * earlier versions still in state, which install the same filter under the same key.
 */
async function quiet<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const bug = [TypeError, ReferenceError, SyntaxError, RangeError].some((type) => error instanceof type);
    if (error instanceof Error && !bug) {
      const store = globalThis as unknown as Record<symbol, Set<string> | undefined>;
      const key = Symbol.for("narwhal-fleet.quieted-provider-errors");
      let quieted = store[key];
      if (!quieted) {
        const held = (quieted = store[key] = new Set<string>());
        const print = console.error.bind(console);
        console.error = (...args: unknown[]) => {
          if (args.length === 1 && typeof args[0] === "string" && held.delete(args[0])) return;
          print(...args);
        };
      }
      quieted.add(`${String(error)}: ${error.stack}`);
    }
    throw error;
  }
}

/** One provider call through the shim: the implementation loaded, the pins read, the result made plain. */
export async function call(implementation: string, method: Method, args: unknown[]): Promise<unknown> {
  const p = implementationOf(implementation);
  switch (method) {
    case "check": {
      const [olds, news] = args;
      return quiet(async () => plain(p.check ? await p.check(olds, news) : { inputs: news }));
    }
    case "diff": {
      const [id, olds, news] = args as [string, unknown, unknown];
      return quiet(() => (pins(news), p.diff!(id, withoutShimProps(olds), withoutShimProps(news))));
    }
    case "create": {
      const [inputs] = args as [Record<string, unknown>];
      pins(inputs);
      // A finished measurement the store refused is kept aside and adopted by the next create of the same inputs.
      return plain(await createKeepingEvidence(implementation, inputs, () => p.create(inputs)));
    }
    case "read": {
      const [id, props] = args as [string, unknown];
      return quiet(async () => (pins(props), plain(p.read ? await p.read(id, props) : { id, props })));
    }
    case "update": {
      const [id, olds, news] = args as [string, unknown, unknown];
      pins(news);
      return plain(await p.update!(id, olds, news));
    }
    case "delete": {
      const [id, props] = args as [string, unknown];
      return quiet(() => (pins(props), p.delete ? p.delete(id, props) : Promise.resolve()));
    }
  }
}

type Props = Record<string, unknown> | undefined;

/** The props a call names its resource's implementation in: the new inputs where the call has them. */
function propsOf(method: Method, args: unknown[]): { props: Props; fallback?: Props } {
  switch (method) {
    case "check":
      return { props: args[1] as Props, fallback: args[0] as Props };
    case "diff":
    case "update":
      return { props: args[2] as Props, fallback: args[1] as Props };
    case "create":
      return { props: args[0] as Props };
    case "read":
    case "delete":
      return { props: args[1] as Props };
  }
}

/**
 * The result with the resource's `__implementation` (and `__evidenceStore`, when it has one) kept, wherever
 * the engine stores props from it.
 */
function keepingShimProps(method: Method, result: unknown, implementation: string, store: string | undefined): unknown {
  const own = { [IMPLEMENTATION]: implementation, ...(store === undefined ? {} : { [EVIDENCE_STORE]: store }) };
  const add = (o: unknown) => (o && typeof o === "object" ? { ...o, ...own } : o);
  const r = result as Record<string, unknown> | undefined;
  if (!r || typeof r !== "object") return result;
  if (method === "check") return { ...r, inputs: add(r.inputs) };
  if (method === "create" || method === "update") return { ...r, outs: add(r.outs) };
  if (method === "read") return { ...r, props: add(r.props) };
  return result;
}

const storeOf = (props: unknown): string | undefined => {
  const store = (props as Props)?.[EVIDENCE_STORE];
  return typeof store === "string" ? store : undefined;
};

/**
 * A diff or update of a resource whose stack now keeps its evidence elsewhere (`evidence.store` changed).
 * The diff reports a change even when nothing measured changed, so the update runs; the update first moves
 * the records and artifacts the resource points at into the new store (lib/evidence/move.ts), then updates
 * as the implementation would, or keeps the outputs when nothing else changed: nothing is measured again.
 */
async function movingStore(implementation: string, method: "diff" | "update", args: unknown[]): Promise<unknown> {
  const [id, olds, news] = args as [string, Record<string, unknown>, Record<string, unknown>];
  const inner = (await call(implementation, "diff", args)) as pulumi.dynamic.DiffResult;
  if (method === "diff") return { ...inner, changes: true };
  if (typeof olds.stack === "string") {
    const from = stackEvidenceStore(olds.stack, {}, parseEvidenceLocation(storeOf(olds)));
    await moveEvidence(from, stackEvidenceStore(olds.stack), evidenceRefsIn(withoutShimProps(olds)));
  }
  return inner.changes ? call(implementation, "update", [id, olds, news]) : { outs: olds };
}

/**
 * One provider call through the shared shim (shim.ts): the implementation the resource names in its props.
 * Shims of earlier versions, still in stack states, name their implementation themselves and use `call`.
 */
export async function dispatch(method: Method, args: unknown[]): Promise<unknown> {
  const { props, fallback } = propsOf(method, args);
  const named = props?.[IMPLEMENTATION] ?? fallback?.[IMPLEMENTATION];
  if (typeof named !== "string") throw new Error(`narwhal-fleet provider shim: the resource names no ${IMPLEMENTATION} for ${method}; run pulumi up with this program to record it`);
  // The store the call's props name: the new inputs' where there are some (the stack's config now), else
  // the store the resource's evidence was written to.
  const store = storeOf(props ?? fallback);
  const moving = (method === "diff" || method === "update") && storeOf(args[1]) !== storeOf(args[2]);
  const result = await withEvidenceLocation(store, () =>
    moving ? movingStore(named, method, args) : call(named, method, args),
  );
  return keepingShimProps(method, result, named, store);
}
