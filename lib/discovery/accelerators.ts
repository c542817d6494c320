import { parseDrmSection, renderNodesByGpu } from "./drm";

/** What a host exposes to its engines, from the PCI scan, the vendor's own tool and (AMD) the DRM class tree. */
export interface AcceleratorInventory {
  readonly vendor: "nvidia" | "amd" | "none";
  /** Product name as the vendor tool prints it, e.g. "NVIDIA H100 80GB HBM3". */
  readonly product: string | null;
  /** `renderNode`: an AMD GPU's `/dev/dri/renderD<N>`, read from /sys/class/drm (absent when sysfs shows none). */
  readonly gpus: ReadonlyArray<{ index: number; busId: string; uuid: string; memoryMiB: number | null; renderNode?: string }>;
  /** Set when the host exposes no GPU: the sentence discovery reports instead of failing silently. */
  readonly notice?: string;
}

const PCI_VENDORS: Record<string, "nvidia" | "amd"> = { "0x10de": "nvidia", "0x1002": "amd" };

/** The runbook's filter: display controllers (0x03xxxx) and processing accelerators (0x12xxxx). */
function isAcceleratorClass(cls: string): boolean {
  return /^0x(03|12)/.test(cls.trim());
}

/** Reads `<bdf> <class> <vendor>` lines and returns the GPU vendors present. */
export function scanPci(text: string): Array<{ bdf: string; vendor: "nvidia" | "amd" }> {
  const found: Array<{ bdf: string; vendor: "nvidia" | "amd" }> = [];
  for (const line of text.split("\n")) {
    const [bdf, cls, vendorId] = line.trim().split(/\s+/);
    const vendor = vendorId ? PCI_VENDORS[vendorId.toLowerCase()] : undefined;
    if (bdf && cls && vendor && isAcceleratorClass(cls)) found.push({ bdf, vendor });
  }
  return found;
}

/** One GPU as the vendor tool lists it. */
export interface GpuRow {
  readonly index: number;
  readonly name: string;
  readonly busId: string;
  readonly uuid: string;
  readonly memoryMiB: number | null;
}

/** Parses `nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total --format=csv,noheader`. */
export function parseNvidiaSmi(text: string): GpuRow[] {
  const rows = text.split("\n").map((l) => l.trim()).filter(Boolean);
  return rows.map((row) => {
    const [index, name, busId, uuid, memory] = row.split(",").map((c) => c.trim());
    const mib = /([\d.]+)\s*MiB/.exec(memory ?? "");
    return { index: Number(index), name: name ?? "", busId: busId ?? "", uuid: uuid ?? "", memoryMiB: mib ? Number(mib[1]) : null };
  });
}

/** Parses `rocminfo`: GPU agents are the ones whose Name is a gfx target. */
export function parseRocminfo(text: string): GpuRow[] {
  const agents = text.split(/^Agent \d+\s*$/m).slice(1);
  const gpus: GpuRow[] = [];
  for (const agent of agents) {
    const field = (k: string) => new RegExp(`^\\s*${k}:\\s*(.+)$`, "m").exec(agent)?.[1]?.trim() ?? "";
    if (!/^gfx/.test(field("Name"))) continue;
    gpus.push({ index: gpus.length, name: field("Marketing Name"), busId: field("BDFID"), uuid: field("Uuid"), memoryMiB: null });
  }
  return gpus;
}

/** The runbook's words when the PCI scan finds no GPU, with what the scan looked for. */
export const NO_GPU_NOTICE =
  "Inspect GPU PCI device exposure on this engine host. " +
  "(No PCI device of class 0x03 or 0x12 from vendor 0x10de or 0x1002 is visible.)";

/** Combines the PCI scan with the vendor tool's view (and, for AMD, the render nodes sysfs shows) into one inventory. */
export function inventoryFrom(sections: { pci?: string; nvidia?: string; rocm?: string; drm?: string }): AcceleratorInventory {
  const pci = scanPci(sections.pci ?? "");
  const vendor = pci[0]?.vendor;
  if (!vendor) return { vendor: "none", product: null, gpus: [], notice: NO_GPU_NOTICE };
  const gpus = vendor === "nvidia" ? parseNvidiaSmi(sections.nvidia ?? "") : parseRocminfo(sections.rocm ?? "");
  const render = vendor === "amd" ? renderNodesByGpu(gpus, parseDrmSection(sections.drm ?? "")) : new Map<number, string>();
  return {
    vendor,
    product: gpus[0]?.name ?? null,
    gpus: gpus.map(({ index, busId, uuid, memoryMiB }) => ({ index, busId, uuid, memoryMiB, ...(render.has(index) ? { renderNode: render.get(index)! } : {}) })),
    notice: gpus.length === 0 ? `PCI shows ${vendor} GPUs but ${vendor === "nvidia" ? "nvidia-smi" : "rocminfo"} lists none: is the driver loaded?` : undefined,
  };
}
