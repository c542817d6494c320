/**
 * An Output of the same value without the resources it was computed from.
 *
 * Pulumi records every resource an input's Output came from in the receiving resource's state, twice
 * (`dependencies` and `propertyDependencies`), and every checkpoint the CLI writes carries them. A figure
 * computed from the whole fleet and given to many resources makes that list fleet-sized in each of them:
 * each fabric edge's budget comes from every engine's cache capture and every host's discovery: at 64
 * engines on 16 hosts, 80 URNs under each of two inputs and again in `dependencies`, 36 KB of each edge's
 * state and 8.7 MB over its 240 edges, 42% of the stack's 20.9 MB. The value itself is all such a resource
 * needs: it cannot be registered before its inputs resolve, so it still comes after everything the value
 * was computed from.
 *
 * Built as the SDK builds `secret()`: an unknown value in a preview stays unknown, a secret stays secret.
 * That uses Output's own fields, which its typings leave out (@pulumi/pulumi is pinned;
 * test/mocks/value-only.test.ts fails if they change).
 */
import * as pulumi from "@pulumi/pulumi";

interface OutputFields<T> {
  promise(withUnknowns?: boolean): Promise<T>;
  isKnown: Promise<boolean>;
  isSecret: Promise<boolean>;
}

type OutputOf<T> = new (resources: Set<pulumi.Resource>, promise: Promise<T>, isKnown: Promise<boolean>, isSecret: Promise<boolean>, allResources: Promise<Set<pulumi.Resource>>) => pulumi.Output<T>;

export function valueOnly<T>(source: pulumi.Output<T>): pulumi.Output<T> {
  const fields = source as unknown as OutputFields<T>;
  const OutputImpl = pulumi.Output as unknown as OutputOf<T>;
  return new OutputImpl(new Set(), fields.promise(true), fields.isKnown, fields.isSecret, Promise.resolve(new Set()));
}
