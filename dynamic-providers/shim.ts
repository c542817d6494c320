import type * as pulumi from "@pulumi/pulumi";

/**
 * Builds the provider object Pulumi serialises into state. Pulumi copies a dynamic provider's local
 * modules by value into every resource's `__provider`, so an edit of lib/ would show as a change on
 * every resource and delete/refresh would keep running the old copy. Instead the serialised object is
 * this shim alone: it holds one relative path and, at call time, loads the implementation from the
 * project the CLI runs in (the provider host's working directory is the program directory).
 */
export function providerShim(implementation: string): pulumi.dynamic.ResourceProvider {
  // One object per implementation: the SDK serialises a provider object once and reuses the text for every
  // resource given the same object, so each resource type costs one serialisation per program run.
  let shim = shims.get(implementation);
  if (!shim) shims.set(implementation, (shim = shimFor(implementation)));
  return shim;
}

const shims = new Map<string, pulumi.dynamic.ResourceProvider>();

function shimFor(implementation: string): pulumi.dynamic.ResourceProvider {
  // tools/ts-require.js compiles each module once into a cache and loads it as JavaScript; Node keeps the
  // module after its first load, so each call after the first costs a map lookup.
  const tsRequire = () => require(require("node:path").join(process.cwd(), "tools", "ts-require.js"));
  const load = (): pulumi.dynamic.ResourceProvider => tsRequire().load(implementation).provider;
  // Every login prefers the host keys the stack's config pins now over those in a resource's old inputs
  // (lib/ssh/configured-hosts.ts): before each call, the hosts list is read again from the stack file.
  const pins = (props: unknown): void => {
    const stack = (props as { stack?: unknown } | undefined)?.stack;
    if (typeof stack !== "string") return;
    const hosts = tsRequire().load("dynamic-providers/stack-config-file.ts").currentHostsConfig(process.cwd(), stack);
    if (hosts !== undefined) tsRequire().load("lib/ssh/configured-hosts.ts").setConfiguredHosts(hosts);
  };
  // The engine's protobuf encoder rejects `undefined` anywhere in a result ("Unexpected struct type"),
  // so every result goes through JSON once: absent fields are dropped, not sent.
  const plain = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
  // The SDK's provider host prints `${error}: ${error.stack}` to its stderr, which the CLI shows under the
  // Stack, for a failed check, diff, read or delete (not create or update), while the resource's own line
  // already carries the message: a refusal the provider worded would show twice, the second time with its
  // JavaScript frames. That one print of that one error is dropped; an error JavaScript itself raised (a bug:
  // TypeError, ReferenceError, ...) keeps its stack. The set is global because the host rebuilds each
  // provider's shim as a module of its own, and all of them share its one console.
  const quiet = async <T>(call: () => T | Promise<T>): Promise<T> => {
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
  };
  // `__provider` is this shim's own text, not an input: a changed shim is never a change of the resource.
  const own = <T>(props: T): T => {
    if (!props || typeof props !== "object") return props;
    const { __provider: _shim, ...rest } = props as Record<string, unknown>;
    return rest as T;
  };
  return {
    check: (olds, news) => quiet(async () => plain(load().check ? await load().check!(olds, news) : { inputs: news })),
    diff: (id, olds, news) => quiet(() => (pins(news), load().diff!(id, own(olds), own(news)))),
    // A finished measurement the store refused is kept aside and adopted by the next create of the same inputs.
    create: async (inputs) => (pins(inputs), plain(await tsRequire().load("dynamic-providers/pending-evidence.ts").createKeepingEvidence(implementation, inputs, () => load().create(inputs)))),
    read: (id, props) => quiet(async () => (pins(props), plain(load().read ? await load().read!(id, props) : { id, props }))),
    update: async (id, olds, news) => (pins(news), plain(await load().update!(id, olds, news))),
    delete: (id, props) => quiet(() => (pins(props), load().delete ? load().delete!(id, props) : Promise.resolve())),
  };
}
