/**
 * The floor for bench/fleet-scale.ts: `resources` dynamic resources whose provider does nothing, so a
 * preview of this stack costs only what the Pulumi engine, the language host and the dynamic provider
 * protocol cost per resource. They form a tree of fan-out 4, as the fleet's gates depend on what came before.
 */
import * as pulumi from "@pulumi/pulumi";

interface Props {
  index: number;
}

/** create returns an id, read returns what it is given, diff finds nothing: no work, no I/O. */
const nothing: pulumi.dynamic.ResourceProvider<Props, Props> = {
  create: async (inputs) => ({ id: `floor-${inputs.index}`, outs: inputs }),
  read: async (id, props) => ({ id, props }),
  diff: async () => ({ changes: false }),
};

class Floor extends pulumi.dynamic.Resource {
  constructor(name: string, props: Props, opts?: pulumi.CustomResourceOptions) {
    super(nothing, name, props, opts, "narwhal-floor", "Nothing");
  }
}

const count = new pulumi.Config().requireNumber("resources");
const made: Floor[] = [];
for (let i = 0; i < count; i++) {
  made.push(new Floor(`r${i}`, { index: i }, i === 0 ? {} : { dependsOn: [made[Math.floor((i - 1) / 4)]!] }));
}

export const resources = made.length;
