/**
 * A host's fake accelerator inventory: which GPUs it has (bus ids, UUIDs), the PCI sysfs tree that is
 * bind-mounted over /sys/bus/pci/devices inside the host, and on AMD hosts the DRM class tree that is
 * added as /sys/class/drm.
 *
 * The tree also holds devices a scan must filter out: a host bridge, a NIC and an NVMe drive on every
 * host, plus a same-vendor device that is not a display controller on GPU hosts (an NVSwitch, class
 * 0x068000, on NVIDIA hosts; an AMD non-essential-instrumentation function, class 0x130000, on AMD).
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { GpuModel, HostSpec } from "../topology";
import { HCA_PCI_ADDRESS } from "../rdma/sysfs";

export interface SimGpu {
  readonly index: number;
  readonly product: string;
  /** sysfs form, lower case with a 4-digit domain: 0000:10:00.0 */
  readonly pciAddress: string;
  /** nvidia-smi form, upper case with an 8-digit domain: 00000000:10:00.0 */
  readonly nvidiaBusId: string;
  /** NVIDIA `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`; AMD rocminfo `GPU-<16 hex>`. */
  readonly uuid: string;
  readonly memoryMiB: number;
  /** rocminfo's BDFID: bus<<8 | device<<3 | function. */
  readonly bdfid: number;
  /**
   * AMD: the minor of the GPU's render node (`/dev/dri/renderD<minor>`). The kernel numbers render nodes
   * in the order drivers probe devices, not by PCI address, so the simulated hosts number them in reverse:
   * GPU i of n has renderD(128 + n - 1 - i), and a reader that assumes renderD(128 + i) finds the wrong one.
   */
  readonly renderMinor: number;
}

export interface PciDevice {
  readonly address: string;
  readonly pciClass: string;
  readonly vendor: string;
  readonly device: string;
  /** Kernel driver named in uevent, when one would be bound. */
  readonly driver?: string;
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");

/** Stable per-host, per-GPU digest so UUIDs never change across `up`/`down`. */
function digest(...parts: Array<string | number>): string {
  return createHash("sha256").update(parts.join("/")).digest("hex");
}

/** GPU i sits on bus 0x10+i (0000:10:00.0, 0000:11:00.0, ...). */
export function gpusOf(host: HostSpec): SimGpu[] {
  const model = host.layout.model;
  if (!model) return [];
  return Array.from({ length: host.layout.count }, (_, index) => {
    const bus = 0x10 + index;
    const d = digest("narwhal-sim-gpu", host.alias, index);
    const uuid =
      model.vendor === "nvidia"
        ? `GPU-${d.slice(0, 8)}-${d.slice(8, 12)}-${d.slice(12, 16)}-${d.slice(16, 20)}-${d.slice(20, 32)}`
        : `GPU-${d.slice(0, 16)}`;
    return {
      index,
      product: model.product,
      pciAddress: `0000:${hex(bus, 2)}:00.0`,
      nvidiaBusId: `00000000:${hex(bus, 2).toUpperCase()}:00.0`,
      uuid,
      memoryMiB: model.memoryMiB,
      bdfid: bus << 8,
      renderMinor: 128 + host.layout.count - 1 - index,
    };
  });
}

/** Every PCI device the host shows, GPUs first. */
export function pciDevicesOf(host: HostSpec): PciDevice[] {
  const model: GpuModel | null = host.layout.model;
  const devices: PciDevice[] = gpusOf(host).map((g) => ({
    address: g.pciAddress,
    pciClass: model!.pciClass,
    vendor: model!.pciVendor,
    device: model!.pciDevice,
    driver: model!.vendor === "nvidia" ? "nvidia" : "amdgpu",
  }));
  if (model?.vendor === "nvidia") {
    devices.push({ address: "0000:60:00.0", pciClass: "0x068000", vendor: "0x10de", device: "0x22a3", driver: "nvidia" });
  } else if (model?.vendor === "amd") {
    devices.push({ address: "0000:50:00.0", pciClass: "0x130000", vendor: "0x1002", device: "0x74a5" });
  }
  // A ConnectX-6 Dx in Ethernet (RoCE) mode has an Ethernet class, so nothing counts it as an IB controller (rdma-facts §1.7).
  if (host.rdma?.length) devices.push({ address: HCA_PCI_ADDRESS, pciClass: "0x020000", vendor: "0x15b3", device: "0x101d", driver: "mlx5_core" });
  devices.push(
    { address: "0000:00:00.0", pciClass: "0x060000", vendor: "0x8086", device: "0x09a2" },
    { address: "0000:30:00.0", pciClass: "0x020000", vendor: "0x8086", device: "0x1592", driver: "ice" },
    { address: "0000:40:00.0", pciClass: "0x010802", vendor: "0x144d", device: "0xa80a", driver: "nvme" },
  );
  return devices;
}

/** Writes `<dir>/<address>/{class,vendor,device,...}` as sysfs would show them, replacing the old tree. */
export function writePciTree(dir: string, host: HostSpec): void {
  fs.rmSync(dir, { recursive: true, force: true });
  for (const dev of pciDevicesOf(host)) {
    const d = path.join(dir, dev.address);
    fs.mkdirSync(d, { recursive: true });
    const files: Record<string, string> = {
      class: dev.pciClass,
      vendor: dev.vendor,
      device: dev.device,
      subsystem_vendor: dev.vendor,
      subsystem_device: "0x0000",
      revision: "0x00",
      numa_node: dev.address < "0000:30" ? "0" : "1",
      uevent: [
        ...(dev.driver ? [`DRIVER=${dev.driver}`] : []),
        `PCI_CLASS=${dev.pciClass.slice(2).toUpperCase()}`,
        `PCI_ID=${dev.vendor.slice(2).toUpperCase()}:${dev.device.slice(2).toUpperCase()}`,
        `PCI_SLOT_NAME=${dev.address}`,
      ].join("\n"),
    };
    for (const [name, value] of Object.entries(files)) fs.writeFileSync(path.join(d, name), `${value}\n`);
  }
}

/**
 * Writes `<dir>/drm` as an AMD host's /sys/class/drm shows it, replacing the old tree: per GPU `card<i>`
 * and `renderD<minor>`, each with `dev` (major 226) and `device`, a link to the GPU's PCI folder as the
 * host sees it, so `readlink -f /sys/class/drm/renderD<minor>/device` ends in the GPU's PCI address; and
 * the class's `version` file. Nothing on hosts of another vendor (they get no /sys/class/drm).
 */
export function writeDrmTree(dir: string, host: HostSpec): void {
  const drm = path.join(dir, "drm");
  fs.rmSync(drm, { recursive: true, force: true });
  if (host.layout.model?.vendor !== "amd") return;
  fs.mkdirSync(drm, { recursive: true });
  fs.writeFileSync(path.join(drm, "version"), "drm 1.1.0 20060810\n");
  for (const g of gpusOf(host)) {
    for (const [name, minor] of [[`card${g.index}`, g.index], [`renderD${g.renderMinor}`, g.renderMinor]] as const) {
      const d = path.join(drm, name);
      fs.mkdirSync(d);
      fs.writeFileSync(path.join(d, "dev"), `226:${minor}\n`);
      fs.writeFileSync(path.join(d, "uevent"), `MAJOR=226\nMINOR=${minor}\nDEVNAME=dri/${name}\nDEVTYPE=drm_minor\n`);
      fs.symlinkSync(`/sys/bus/pci/devices/${g.pciAddress}`, path.join(d, "device"));
    }
  }
}

/**
 * Device nodes a GPU host shows under /dev (paths relative to /dev). They are made in a private tmpfs
 * inside the host (see anchor.ts) with the numbers of /dev/null, so they exist and open harmlessly.
 */
export function deviceNodesOf(host: HostSpec): string[] {
  // An HCA's verbs and connection-manager nodes (rdma-facts §1.7), which a container with RDMA maps.
  const rdma = host.rdma?.length ? ["infiniband/uverbs0", "infiniband/rdma_cm"] : [];
  const model = host.layout.model;
  if (!model) return rdma;
  const n = host.layout.count;
  if (model.vendor === "nvidia") {
    return ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", ...Array.from({ length: n }, (_, i) => `nvidia${i}`), ...rdma];
  }
  return [...rdma,
    "kfd",
    ...Array.from({ length: n }, (_, i) => `dri/card${i}`),
    ...gpusOf(host).map((g) => `dri/renderD${g.renderMinor}`),
  ];
}
