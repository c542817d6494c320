/**
 * The base of every component here: a ComponentResource whose fields Pulumi's Output checks do not walk.
 *
 * Every value an Output resolves is searched for unknowns through all its enumerable properties
 * (`containsUnknowns` in @pulumi/pulumi's output.js), once when the Output is made and again whenever
 * it is awaited. A resource inside such a value (a `dependsOn` list, a resource option) leads through
 * `__parentResource` to its component, and from a component's fields to every resource it holds: from the
 * fleet, to the whole fleet. So each such search cost a walk of the fleet, the program made one or more
 * per engine, and its CPU grew with the square of the fleet (64 engines under mocks: 29 of 44 busy seconds
 * in that walk alone).
 *
 * `registerOutputs`, which ends every constructor here, makes the component's own fields non-enumerable:
 * still read as before, no longer walked. Pulumi's own `__` fields stay as they are.
 */
import * as pulumi from "@pulumi/pulumi";

export class OpaqueComponent extends pulumi.ComponentResource {
  protected override registerOutputs(outputs?: pulumi.Inputs | Promise<pulumi.Inputs> | pulumi.Output<pulumi.Inputs>): void {
    unlistOwnFields(this);
    super.registerOutputs(outputs);
  }
}

/** Makes `target`'s own enumerable fields, but Pulumi's (`__…`, `urn`), non-enumerable in place. */
export function unlistOwnFields(target: object): void {
  for (const key of Object.keys(target)) {
    if (key.startsWith("__") || key === "urn") continue;
    Object.defineProperty(target, key, { enumerable: false });
  }
}
