import * as pulumi from "@pulumi/pulumi";
import { PROVIDER_TEXT, providerShim } from "./shim";
import { EVIDENCE_STORE, IMPLEMENTATION } from "../lib/shim-props";

/** A resource's arguments: each input as a value or a Pulumi Input. */
export type ArgsOf<I> = { [K in keyof I]: pulumi.Input<I[K]> };

/** The names create adds to the inputs. */
type Added<I, O> = Exclude<keyof O, keyof I> & string;

/** Compiles only when `L` names every one of `K`; otherwise the error names what is missing. */
type Complete<L extends readonly string[], K extends string> = [Exclude<K, L[number]>] extends [never] ? unknown : { missingOutputs: Exclude<K, L[number]> };

/** A dynamic resource as its program sees it: every input and output as a typed Output. */
export type DynamicResource<O> = pulumi.CustomResource & { readonly [K in keyof O]-?: pulumi.Output<O[K]> };

export interface DynamicResourceClass<A, O> {
  new (name: string, args: A, opts?: pulumi.CustomResourceOptions): DynamicResource<O>;
  /** The shim every resource names in its `__provider` (PROVIDER_TEXT is its serialised text). */
  readonly provider: pulumi.dynamic.ResourceProvider;
}

export interface DynamicResourceSpec<O, L> {
  /**
   * The type token's last part (`pulumi-nodejs:dynamic/narwhal:<type>`). State is keyed by it: a
   * rename needs an alias from the old token, or every existing resource is replaced.
   */
  type: string;
  /**
   * The provider module, relative to the program directory. State names it and a refresh or destroy
   * loads it from there, so a module that moves leaves a forwarder behind (engine-liveness/provider.ts).
   */
  provider: string;
  /**
   * Every output create adds to the inputs. The engine gives a resource a property only for the
   * names it was registered with, so each is registered, empty until create fills it.
   */
  outputs: L;
  /** Inputs and outputs Pulumi must encrypt in state, on every resource of this type. */
  secretOutputs?: ReadonlyArray<keyof O & string>;
  /** Type tokens this resource had before, so existing state keeps its resources. */
  aliases?: pulumi.Input<string | pulumi.Alias>[];
}

let evidenceStore: string | undefined;

/**
 * The stack's `evidence.store` (undefined: the default folder), set once by the program's entry before
 * any resource is declared. Like the stack's name, it is one fact of the whole run: every dynamic
 * resource carries it as a prop for its provider (lib/evidence/stack-store.ts) rather than each component
 * passing it down. The default adds no prop, so stacks on the folder see no change.
 */
export function useEvidenceStore(location: string | undefined): void {
  evidenceStore = location;
}

/**
 * Builds the dynamic resource class for one provider from its `types.ts` (inputs `I`, outputs
 * `O`, arguments `A`) and a spec, so a resource's module says only what is particular to it. Called
 * twice because TypeScript infers the outputs' list but not `I` and `O`:
 * `class Foo extends dynamicResource<FooInputs, FooOutputs>()({ type: "Foo", ... }) {}`.
 */
export function dynamicResource<I extends object, O extends object, A = ArgsOf<I>>() {
  return <const L extends ReadonlyArray<Added<I, O>>>(spec: DynamicResourceSpec<O, L> & { outputs: Complete<L, Added<I, O>> }): DynamicResourceClass<A, O> => {
    const shim = providerShim;
    const own: pulumi.CustomResourceOptions = {
      ...(spec.aliases ? { aliases: spec.aliases } : {}),
      ...(spec.secretOutputs ? { additionalSecretOutputs: [...spec.secretOutputs] } : {}),
    };
    const optionsOf = (opts?: pulumi.CustomResourceOptions) => (Object.keys(own).length ? pulumi.mergeOptions(opts, own) : opts);
    // What pulumi.dynamic.Resource registers, with the provider's text given rather than serialised.
    class Declared extends pulumi.CustomResource {
      static readonly provider = shim;
      constructor(name: string, args: A, opts?: pulumi.CustomResourceOptions) {
        const outputs = Object.fromEntries(spec.outputs.map((k) => [k, undefined]));
        const store = evidenceStore === undefined ? {} : { [EVIDENCE_STORE]: evidenceStore };
        const props = { ...outputs, ...(args as object), [IMPLEMENTATION]: spec.provider, ...store, __provider: PROVIDER_TEXT };
        super(`pulumi-nodejs:dynamic/narwhal:${spec.type}`, name, props, optionsOf(opts));
      }
    }
    return Declared as unknown as DynamicResourceClass<A, O>;
  };
}
