/**
 * ROCm device nodes read from the host, not assumed: each AMD GPU's render node is the
 * `/sys/class/drm/renderD<N>` whose `device` link resolves to the GPU's PCI function (the kernel numbers
 * render nodes in the order drivers probe devices, so `renderD(128+i)` is not GPU i in general), and the
 * pre-launch device check holds `/dev/kfd` and each GPU's `/dev/dri/renderD<N>`.
 */
import type { DevicePath } from "./devices";

/** A GPU as the render-node match needs it: the vendor tool's index and PCI address (lib/discovery/accelerators.ts's GpuRow). */
export interface GpuBus {
  readonly index: number;
  readonly busId: string;
}

/** One render node as sysfs shows it: its name and the PCI address its `device` link resolves to. */
export interface RenderNode {
  readonly name: string;
  /** `0000:c1:00.0`, or null when the link does not end in a PCI address. */
  readonly pciAddress: string | null;
}

const PCI_ADDRESS = /^([0-9a-f]{4,}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/;

/** Parses the probe's `drm` section: `renderD<N>\t<readlink -f of its device link>` per line (anything else is skipped). */
export function parseDrmSection(text: string): RenderNode[] {
  const nodes: RenderNode[] = [];
  for (const line of text.split("\n")) {
    const [name, target = ""] = line.split("\t");
    if (!/^renderD[0-9]+$/.test(name)) continue;
    const last = target.replace(/\/+$/, "").split("/").pop()!.toLowerCase();
    nodes.push({ name, pciAddress: PCI_ADDRESS.test(last) ? last : null });
  }
  return nodes;
}

/**
 * rocminfo's `BDFID` (bus << 8 | device << 3 | function, in decimal) as the `bus:device.function` part of
 * a PCI address, or null when it is not such a number.
 */
export function bdfidFunction(bdfid: string): string | null {
  if (!/^[0-9]+$/.test(bdfid.trim())) return null;
  const n = Number(bdfid.trim());
  if (n > 0xffff) return null;
  const hex = (v: number) => v.toString(16).padStart(2, "0");
  return `${hex(n >> 8)}:${hex((n >> 3) & 0x1f)}.${n & 0x7}`;
}

/** The render node (`/dev/dri/renderD<N>`) of each AMD GPU, by GPU index; a GPU sysfs shows none for has none. */
export function renderNodesByGpu(gpus: ReadonlyArray<GpuBus>, nodes: ReadonlyArray<RenderNode>): Map<number, string> {
  const out = new Map<number, string>();
  for (const g of gpus) {
    const fn = bdfidFunction(g.busId);
    // rocminfo's BDFID has no PCI domain: a GPU outside domain 0 is matched by bus, device and function.
    const node = fn ? nodes.find((n) => n.pciAddress?.endsWith(`:${fn}`)) : undefined;
    if (node) out.set(g.index, `/dev/dri/${node.name}`);
  }
  return out;
}

/** The device paths an AMD host's engines need, in the order the pre-launch check reports them. */
export function amdDevicePaths(renderNodes: ReadonlyMap<number, string>): string[] {
  return ["/dev/kfd", ...[...renderNodes].sort(([a], [b]) => a - b).map(([, node]) => node)];
}

/**
 * What sysfs did not show: each AMD GPU without a render node, named by index and PCI function, as a
 * sentence the discovery error carries (it names the host).
 */
export function missingRenderNodes(gpus: ReadonlyArray<GpuBus>, renderNodes: ReadonlyMap<number, string>): string[] {
  return gpus
    .filter((g) => !renderNodes.has(g.index))
    .map((g) => {
      const fn = bdfidFunction(g.busId);
      return (
        `AMD GPU ${g.index} (rocminfo BDFID ${g.busId}${fn ? `, PCI ${fn}` : ""}) has no render node: no /sys/class/drm/renderD* links to that PCI function; ` +
        "is the amdgpu driver bound to it? Restore the declared device exposure before launch."
      );
    });
}

/** The device paths checked present or missing, only those of `wanted`, in its order. */
export function pickDevicePaths(seen: ReadonlyArray<DevicePath>, wanted: ReadonlyArray<string>): DevicePath[] {
  return wanted.map((w) => seen.find((p) => p.path === w) ?? { path: w, present: false });
}
